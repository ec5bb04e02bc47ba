"""The GPU check's report as text (scripts/gpu_check.py writes it): summary.md, each stage's
result in a few words, and docs/gpu/reference.md with its "Measured here" column filled."""

from __future__ import annotations

import re

NOT_STARTED = "not started"
REF = re.compile(r"^(?P<line>.*?)\s+\[ref (?P<key>[\w-]+)\]$")  # lecture_utils.checks.REF, at a line's end


def target_verdict(line: str) -> str:
    """met, missed, gross regression, no target here, or not measured, from a benchmark's target line."""
    for ending, verdict in (("gross regression (worse than half the target)", "gross regression"),
                            (": met", "met"), (": missed", "missed")):
        if line.endswith(ending):
            return verdict
    return "not measured" if "not measured" in line else "no target here"


def brief(row: dict) -> str:
    """A stage's result in a few words, for its line on the console and in summary.md."""
    detail = row.get("detail", {})
    if row["status"] in ("timed out", "crashed", "stopped", NOT_STARTED, "running"):
        return row.get("reason", "")
    if row["kind"] == "notebook":
        blocks = [b["status"] for b in detail.get("blocks", [])]
        counts = ", ".join(f"{blocks.count(s)} {s}" for s in ("passed", "failed", "skipped") if blocks.count(s))
        return (f"{detail['ran']}/{detail['cells']} cells, {detail['checks']} checks, {len(detail['skipped'])} "
                f"skipped; GPU blocks: {counts or 'none'}" + (f"; {detail['error']}" if "error" in detail else ""))
    verdicts = [target_verdict(t) for t in row.get("targets", [])]
    return (f"exit {detail.get('returncode')}; targets: "
            + (", ".join(f"{verdicts.count(v)} {v}" for v in dict.fromkeys(verdicts)) or "none printed"))


def summary_markdown(report: dict) -> str:
    stages = report["stages"]
    lines = [f"# GPU check: {report['gpu']}", "",
             f"- {report['date']}; torch {report['torch']}, CUDA {report['cuda']}, driver {report['driver']}, "
             f"Python {report['python']}",
             f"- `{report['command']}`: {report['verdict']}, {report['seconds']} s (deadline {report['deadline_s']:g} s)"]
    lines += [f"- **{n} was running when this report was written**; if the check is no longer running, it "
              "stopped there." for n, r in stages.items() if r["status"] == "running"]
    lines += ["", "## Stages", "", "| stage | status | seconds | what it found |", "| --- | --- | --- | --- |"]
    lines += [f"| {n} | {r['status']} | {r.get('seconds', '')} | {brief(r)} |" for n, r in stages.items()]
    lines += ["", "## GPU-only blocks (`if cuda_only(device, ...)`)", "",
              "Each block by its name: passed, failed (with the error) or skipped (and why); what it checks; "
              "what it measured.", ""]
    for name, r in stages.items():
        for b in r.get("detail", {}).get("blocks", []):
            detail = b.get("message") or b.get("reason") or ""
            lines.append(f"- **{b['status']}**: {name}, cell {b['cell']}: {b['what']}" + (f" ({detail})" if detail else ""))
            lines += [f"  - failing statement: `{b['statement']}`"] if b.get("statement") else []
            lines += [f"  - checks: `{c}`" for c in b["checks"]] or ["  - checks: (no assert: it only measures)"]
            lines += [f"  - `{m}`" for m in b["measured"]]
    lines += ["", "## Benchmark targets", "", "Targets and their sources: [reference.md](reference.md#benchmark-targets). "
              "A missed target is information; only a gross regression (worse than half the target) fails a "
              "benchmark.", ""]
    lines += [f"- {n}: `{t}`" for n, r in stages.items() for t in r.get("targets", [])] or ["- (none ran)"]
    lines += ["", "Every `[measured]` and `[per-device]` line and every figure: `report.json`; every stage's output: "
              "`logs.txt`; published figures beside these: [reference.md](reference.md)."]
    return "\n".join(lines) + "\n"


def fill_reference(text: str, report: dict) -> str:
    """reference.md with its "Measured here" column filled; every other cell kept as it is.

    A row's value is what a cell printed with ``measured(..., ref=<the row's key>)``; a row that
    no block measured this run says why (its block was skipped, or nothing printed it).
    """
    stamp = f"{report['gpu']}, torch {report['torch']}, CUDA {report['cuda']}, {report['date']}"
    values, reasons = {}, {}
    for r in report["stages"].values():
        for b in r.get("detail", {}).get("blocks", []):
            for line in b["measured"]:
                if m := REF.match(line):
                    values[m["key"]] = m["line"].split(": ", 1)[-1] + (" (its block failed)" if b["status"] == "failed" else "")
            if b["status"] == "skipped":
                reasons[b["what"]] = f"not measured: skipped ({b['reason']})"
    out, column = [], None
    for line in text.splitlines():
        if line.startswith("**Measured here:**"):
            line = f"**Measured here:** {stamp}, by `scripts/gpu_check.py` (details: summary.md, report.json)."
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if "Measured here" in cells:
                column = cells.index("Measured here")
            elif column is not None and len(cells) > column and not cells[column].startswith("—"):
                key, stands_in = cells[0].strip("`"), cells[column - 1] if column else ""
                reason = next((why for what, why in reasons.items() if what in stands_in), "not measured this run")
                cells[column] = f"{values.get(key, reason)} ({report['gpu']})".replace("|", "/")
                line = "| " + " | ".join(cells) + " |"
        else:
            column = None  # a table ends at the first line that is not a row
        out.append(line)
    return "\n".join(out) + "\n"
