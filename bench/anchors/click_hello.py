"""The start-up floor of a click CLI: a hello-world group with one command (run with `hello --help`)."""

import click


@click.group()
def cli() -> None:
    """A click hello-world."""


@cli.command()
def hello() -> None:
    """Say hello."""
    click.echo("hello")


if __name__ == "__main__":
    cli()
