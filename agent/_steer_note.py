"""How a message the user sends while the agent works reaches the model: after a tool's result, or as a user
message of its own, behind this note. The session writes it; the model client reads it back for the pasted-call
rule (`agent.models._text_tool_calls`), so it lives apart from both."""

STEER_NOTE = "[Message from the user while you were working]"
