import agent


def test_public_names_are_a_conscious_choice():
    assert agent.__all__ == sorted(agent.__all__)
    assert set(agent.__all__) == {
        "HOOK_NAMES", "RESERVED_TOOLSETS", "SYSTEM_CLOCK", "Activity", "ActiveTurn", "AgentError", "AgentSession",
        "Clock", "CompactionPolicy", "Compactor", "HookRegistry", "Model", "ModelError", "ModelRequest", "ModelResponse", "PluginCommand",
        "PluginContext", "PluginError", "PluginHost", "PluginThreads", "SystemClock", "Tool", "ToolCall", "ToolContext", "ToolError",
        "ToolRegistry", "ToolTraceEntry", "TurnInProgress", "TurnObserver", "TurnResult", "Usage", "active_turn", "exceeds_context", "model_failure_kind", "new_id",
        "tool_failure_text",
    }
    for name in agent.__all__:
        assert hasattr(agent, name)
