"""Where TabSwift's weights come from and how they are read and written; the network itself is ``tabswift.network``.

- ``format``: our checkpoint, a safetensors file beside a JSON record (config, metadata, sha256): save, load
  (the checksum verified), read the record alone.
- ``released``: the authors' released ``swift.ckpt`` read safely and converted into our format, once, into the
  cache (``autogluon-maya-convert``).
- ``export``: the other direction, one of our checkpoints written in the authors' layout
  (``python -m autogluon_maya.tabswift.export``).
- ``hub``: the released file from the Hugging Face hub: local caches first, a bounded probe, the pinned
  revision and sha256, a file lock so that parallel processes download and convert once.
- ``choice``: which weights a ``checkpoint_path`` value names and why (``choose_weights``, ``WeightsChoice``),
  and ``prefetch_weights`` (``autogluon-maya-prefetch``).
- ``info``: the network size a fit would load, read from a checkpoint's JSON without loading it (the memory
  estimates), and the line a fit logs about its checkpoint.

``format``, ``released`` and ``export`` import torch; ``choice``, ``hub`` and ``info`` import it (and
huggingface_hub) only inside the functions that need it, so ``import autogluon_maya`` stays light.
"""
