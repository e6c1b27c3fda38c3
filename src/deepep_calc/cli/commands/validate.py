"""`deepep-calc validate`: the model against every published reference, in sample and out of
sample (leave a group out), with the disaggregated deployments it was never fitted to.

Only click is imported at module level; the report and rich load inside the command.
"""

from __future__ import annotations

import click

from ..options import emit_json


def register(app: click.Group) -> None:
    app.add_command(validate_cmd)


@click.command("validate")
@click.option(
    "--cv", "cross_validated", is_flag=True, help="also predict each reference with a fit that never saw it"
)
@click.option("--json", "as_json", is_flag=True, help="print the report as JSON")
@click.option("--md", "as_md", is_flag=True, help="print the tables as Markdown")
@click.option("--sources", is_flag=True, help="number every reference's source and list them at the end")
def validate_cmd(cross_validated: bool, as_json: bool, as_md: bool, sources: bool) -> None:
    """The model against every published reference, in sample and (--cv) out of sample."""
    from ...accuracy.validate import validate

    report = validate(cross_validated=cross_validated)
    if as_json:
        emit_json(report.to_json())
        return
    if as_md:
        from ...report.accuracy_md import disagg_markdown, validation_markdown

        click.echo(validation_markdown(report), nl=False)
        click.echo("\n### Disaggregated deployments (never fitted)\n")
        click.echo(disagg_markdown(report.disaggregated, report.disaggregated_cv), nl=False)
        return
    from ...report.validation_view import print_report

    print_report(report, sources)
