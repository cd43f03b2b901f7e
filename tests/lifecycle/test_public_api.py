import lifecycle


def test_public_names_are_a_conscious_choice():
    assert lifecycle.__all__ == sorted(lifecycle.__all__)
    assert set(lifecycle.__all__) == {
        "AsyncSubagentLifecycle", "BackgroundDispatch", "CONTRACT_VERSION", "ChildHost", "DispatchedTask",
        "PROCESS_EXIT", "ChildJob", "ChildOutcome", "ChildSnapshot",
        "ChildSpec", "Engine", "EngineHost", "HostView", "InProcessEngine", "Journal", "JournalError",
        "JournalRecord", "KeyRing", "MAX_CONTEXT_CHARS", "MAX_GOAL_CHARS", "MAX_METADATA_BYTES", "MAX_RESULT_CHARS",
        "MemoryJournal", "MemoryProvider", "NOT_READY", "RECONNECT_UNAVAILABLE", "SqliteDatabase", "SqliteJournal",
        "SubagentCancelResult", "SubagentHandle", "SubagentLaunchRequest", "SubagentLifecycle",
        "SubagentLifecycleError", "SubagentReconnectResult", "SubagentResult", "SubagentState", "SubagentStatus",
        "SubagentTerminalState", "SubagentUsage", "UNKNOWN_HANDLE", "UNSAFE_CHILD_TOOLS", "delegate_tool",
        # delegation routing (issue 17)
        "BackendUnavailable", "ChildRoute", "DEFAULT_BACKEND", "DelegationBackend", "RouteOption", "RouteRefused",
        "Routing",
    }
    for name in lifecycle.__all__:
        assert hasattr(lifecycle, name)


def test_the_gateway_reaches_the_lifecycle_only_through_its_public_names():
    import pathlib
    import re

    gateway = pathlib.Path(lifecycle.__file__).parents[1] / "gateway"
    private = [
        f"{path.name}: {line.strip()}"
        for path in gateway.rglob("*.py")
        for line in path.read_text().splitlines()
        if re.match(r"\s*(from|import) lifecycle\._", line)
    ]
    assert private == []
