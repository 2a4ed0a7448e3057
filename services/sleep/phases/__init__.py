"""The I/O of the five consolidation phases, one module each, run in order by `runner`.

Each phase is `async def run(rc: RunContext, result: <Phase>Result) -> None`: it fills the
result accumulator as it goes (so an abort or an error keeps what was counted), calls
`rc.checkpoint()` between batches, and commits each batch in its own transaction. The
decisions themselves are the pure `*_logic` modules beside this package.
"""
