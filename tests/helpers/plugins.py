"""Plugins handed to the CLI from inside a test."""
from __future__ import annotations


def add_plugin_to_the_cli(monkeypatch, plugin: object) -> None:
    """Every plugin manager the CLI builds during this test also holds ``plugin``."""
    import nsbench.flags
    from nsbench.plugins import manager as plugins

    original = plugins.get_plugin_manager

    def with_plugin(local, **kwargs):
        manager = original(local, **kwargs)
        manager.register(plugin)
        return manager

    monkeypatch.setattr(nsbench.flags, "get_plugin_manager", with_plugin)
