"""Render a generated chat as a mini-SWE-agent trajectory: the first speaker is the user, the others
the agent's replies (no times: the format has none)."""

import orjson


def _user(session, turn):
    return turn.speaker == session.turns[0].speaker


def render(session):
    messages = [{"role": "user" if _user(session, t) else "assistant", "content": t.content} for t in session.turns]
    doc = {"info": {"exit_status": "Submitted", "model_stats": {"instance_cost": 0.01, "api_calls": 1},
                    "config": {"model": {"model_name": "anthropic/claude-sonnet-4-5-20250929"}}},
           "messages": messages, "trajectory_format": "mini-swe-agent-1.1"}
    return "pallets__flask-4045.traj.json", orjson.dumps(doc, option=orjson.OPT_INDENT_2)


def expected(session):
    return [("User" if _user(session, t) else "Assistant", t.content, None) for t in session.turns]
