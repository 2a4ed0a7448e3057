"""`python -m services.retrieve` / `memoryd serve retrieve`: settings from MEMORYD_* variables, then run."""

from shared.service import main

from .app import DB_SESSION_STATE, METRICS, NEEDS_DB, load_settings, setup

if __name__ == "__main__":
    raise SystemExit(
        main(
            "retrieve",
            setup,
            needs_db=NEEDS_DB,
            db_session_state=DB_SESSION_STATE,
            load_settings=load_settings,
            metrics=METRICS,
        )
    )
