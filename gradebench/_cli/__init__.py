"""The ``gradebench`` command and its run config."""
