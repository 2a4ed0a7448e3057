"""Adapters that let code written for another memory interface use memoryd.

Each integration is a subpackage that imports its framework only when it is itself imported
(``import memoryd`` loads none of them): ``memoryd.integrations.langgraph`` is a LangGraph
``BaseStore`` over the gateway's REST API (``pip install 'memoryd[langgraph]'``).
"""
