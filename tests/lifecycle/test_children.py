"""Building a child's session from its job and its live parent."""

from agent import AgentSession, HookRegistry, ToolRegistry
from agent.models.scripted import ScriptedModel
from lifecycle import ChildHost
from lifecycle._children import ChildSpec, build_child, plan_job


def child_of(parent: AgentSession) -> AgentSession:
    host = ChildHost(tools=ToolRegistry(), hooks=HookRegistry())
    job = plan_job(host, parent, ChildSpec("a task"), subagent_id="sa-1", parent_turn_id="t-1", model=parent.model)
    return build_child(host, job, parent, parent.model)


def test_a_child_gets_the_parents_services_but_never_its_chat_only_ones():
    shared = {"file_scope": object(), "http": object()}
    chat_only = {name: object() for name in ("clarify", "send_message", "send_file", "memory_path", "note_key")}
    parent = AgentSession(model=ScriptedModel(), services={**shared, **chat_only})
    assert child_of(parent).services == shared
    parent = AgentSession(model=ScriptedModel(), services=shared)
    child = child_of(parent)
    assert child.services == shared
    child.services["mine"] = object()  # the child's own copy: the parent's stays as it was
    assert parent.services == shared
