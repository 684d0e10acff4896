"""The CLI's account of its run (its transcript, parsed), checked against what the harness saw
itself: events after the CLI's final one are not the CLI's, and under Claude Code a tool call or
final message the model never gave (the gateway's record, `gateway.said`) was written by someone
else. What fails the check is left out of the record, and each finding is listed in the run's
`integrity`: where the two accounts differ, the gateway's wins.
"""

from __future__ import annotations

from pytest_scylla.run.agents import Result
from pytest_scylla.run.gateway.said import Said
from pytest_scylla.run.integrity import Finding

SHOWN_IDS = 5  # ids named in a finding's detail


def check(result: Result, said: Said, own_text: bool = True) -> list[Finding]:
    """Findings about `result`, which is corrected in place (its forged tool calls forgotten,
    its final message the model's own). `own_text`: whether the parsed final message is the
    model's text as the CLI printed it (Claude Code's own adapter; one from a plugin may mark
    or rewrite it, and is not compared)."""
    found = []
    if result.after_result:
        found.append(
            Finding(
                "forged_events",
                "transcript.jsonl",
                f"{result.after_result} event(s) after the CLI's result event, ignored",
            )
        )
    unsaid = said.unsaid(result.call_ids())
    if unsaid:
        result.forget(set(unsaid))
        named = ", ".join(sorted(set(unsaid))[:SHOWN_IDS])
        found.append(
            Finding(
                "transcript_mismatch",
                "transcript.jsonl",
                f"{len(set(unsaid))} tool call(s) the model never made, ignored (ids {named})",
            )
        )
    if own_text and result.found and result.subtype == "success" and not result.is_error:
        own = said.final_text(result.final_message)
        if own is not None:
            found.append(
                Finding(
                    "transcript_mismatch",
                    "transcript.jsonl",
                    f"a final message the model never wrote "
                    f"({len(result.final_message)} characters) was replaced by "
                    "its last one",
                )
            )
            result.final_message = own
    return found
