"""The report of a delegation a restart interrupted says what ``/retry`` runs again: the interrupted children, and
the failed ones too (`gateway.ledger.Ledger.retry`)."""

from __future__ import annotations

from gateway.testing import settled
from lifecycle import SubagentState
from tests.gateway.test_ledger import start
from tests.polling import until


async def test_the_restart_report_names_the_failed_children_retry_runs_again(tmp_path, gateways):
    """It read ``Send /retry to run the interrupted ones again.``, and /retry then ran the failed one too."""

    def leaf(request):
        if request.metadata["goal"] == "alpha":
            return {"error": "auth", "message": "model request failed (auth): no"}
        return {"wait": "forever"}

    chat, model, gateway = await start(gateways, tmp_path, leaf)
    await chat.say("please delegate")
    await chat.wait_for(lambda: chat.texts() == ["on it"])
    await model.reached("forever")
    session_id = next(iter(gateway.sessions)).session_id
    await until(lambda: any(c.state is SubagentState.FAILED for c in gateway.host.children.recent(session_id)))
    await gateway.stop(grace=0)  # alpha failed, beta still at work

    chat2, _, gateway2 = await start(gateways, tmp_path, lambda r: {"text": f"redone {r.metadata['goal']}"})
    await chat2.wait_for(lambda: chat2.messages)
    await settled(gateway2)
    [report] = chat2.texts()
    assert "• Failed: alpha" in report and "• Interrupted: beta" in report
    assert report.endswith("Send /retry to run the interrupted and failed ones again.")
    await chat2.say("/retry")
    await chat2.wait_for(lambda: chat2.texts("command"))
    assert chat2.texts("command") == ["Retrying 2 subagents: alpha; beta. The results will follow."]
    await chat2.wait_for(lambda: len(chat2.texts("completion")) == 2)
    await settled(gateway2)
