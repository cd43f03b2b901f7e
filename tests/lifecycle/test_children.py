"""Building a child's session from its job and its live parent."""

from agent import AgentSession, HookRegistry, ToolRegistry
from agent.models.scripted import ScriptedModel
from lifecycle import ChildHost, ChildRoute
from lifecycle._children import ChildSpec, build_child, child_system_prompt, plan_job
from lifecycle.settings import DelegationSettings
from tests.lifecycle.conftest import make_registry


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


def test_an_orchestrator_left_without_delegate_task_is_planned_and_told_as_a_leaf():
    # It was planned as an orchestrator from its depth alone, its handle said so, and its prompt told
    # it to split the task with delegate_task, a tool its narrowed toolsets had left out.
    registry = make_registry()
    host = ChildHost(tools=registry, hooks=HookRegistry(), delegation=DelegationSettings(max_spawn_depth=3))
    model = ScriptedModel()
    parent = AgentSession(model=model, tools=registry.resolve(None))
    file_only = AgentSession(model=model, tools=registry.resolve(["file"]), enabled_toolsets=frozenset({"file"}))

    def planned(parent, spec, route=None):
        return plan_job(host, parent, spec, subagent_id="sa-1", parent_turn_id="t-1", model=model, route=route)

    orchestrator = ChildSpec("split this", role="orchestrator")
    delegating = planned(parent, orchestrator)
    assert delegating.role == "orchestrator" and "delegate_task" in delegating.tools
    assert "delegate_task" in child_system_prompt(delegating, "", 3)
    narrowed = {
        "its toolsets": planned(parent, ChildSpec("split this", role="orchestrator", allowed_toolsets=("file",))),
        "its route's": planned(parent, orchestrator, ChildRoute("reviewer", toolsets=("file",))),
        "its parent's": planned(file_only, orchestrator),
    }
    for why, job in narrowed.items():
        assert (job.role, "delegate_task" in job.tools) == ("leaf", False), why
        assert "delegate_task" not in child_system_prompt(job, "", 3), why
