"""The musdb, biodenoising and fuss clip loaders cross to worker processes."""
from __future__ import annotations

import pickle

from nsbench.builtin.datasets import biodenoising, fuss, musdb

from tests.helpers.dataset_layouts import bio_options, fuss_options, musdb_options


def test_clip_loaders_pickle_for_worker_processes(musdb_root, bio_parent, fuss_root, cache):
    for sources in (musdb.clips(musdb_options(musdb_root)), biodenoising.clips(bio_options(bio_parent)),
                    fuss.clips(fuss_options(fuss_root))):
        clip = pickle.loads(pickle.dumps(sources[0].load))()
        assert clip.clip_id == sources[0].clip_id
