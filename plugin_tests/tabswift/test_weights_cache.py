"""Checkpoint writes into a shared cache: each writer has temporary files of its own, renamed onto the target."""

from __future__ import annotations

import os

from autogluon_maya.tabswift.checkpoints_io import format as weights
from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT
from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint, read_checkpoint_info, save_checkpoint


def test_a_second_writer_between_write_and_rename_leaves_a_valid_checkpoint(tmp_path, monkeypatch):
    """Two processes converting the released weights into one cache at once: here the second writer runs to its
    end between the first one's write of the weights and its rename.  Each renames its own temporary file, both
    succeed, the checkpoint verifies, and no temporary file is left."""
    net = load_checkpoint(SHIPPED_CHECKPOINT)
    target = tmp_path / "cache" / "swift"
    real_replace, seen = os.replace, []

    def second_writer_first(src, dst):
        seen.append(os.path.basename(src))
        if len(seen) == 1:
            save_checkpoint(net, target)  # the other process, start to end
        return real_replace(src, dst)

    monkeypatch.setattr(weights.os, "replace", second_writer_first)
    save_checkpoint(net, target, metadata={"writer": "first"})
    monkeypatch.undo()
    assert len(set(seen)) == 4  # weights and JSON of two writers: four temporary names
    loaded = load_checkpoint(target)  # checksum verified against the JSON that won
    assert read_checkpoint_info(target)["metadata"] == {"writer": "first"}
    assert sorted(p.name for p in target.parent.iterdir()) == ["swift.json", "swift.safetensors"]
    assert all(p.stat().st_mode & 0o777 == 0o644 for p in target.parent.iterdir())  # readable by other accounts
    assert all((a == b).all() for a, b in zip(loaded.state_dict().values(), net.state_dict().values()))
