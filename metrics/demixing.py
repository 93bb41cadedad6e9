"""SDR as scored in the Music Demixing challenges, on a voice/accompaniment split.

Solovyev et al., "Benchmarks and leaderboards for sound demixing tasks",
arXiv:2305.07489 (and the MDX 2021 challenge's "new SDR"), per stem::

    SDR_stem = 10 log10( sum s^2 / sum (s - s_hat)^2 )

with the error s - s_hat in the denominator (the seed card writes the estimate
alone there; the paper's text and the challenge code use the error). The
challenge adds ``delta = 1e-7`` to numerator and denominator; we add the same,
so a perfect estimate scores a large finite number (about 106 dB for 10 s of
audio at -20 dBFS) instead of +inf. A *silent* reference stem is different: the
challenge would score it 0 dB or below whatever the estimate does, which says
nothing; here it is undefined, with the reason.

An enhancement engine returns the voice; the accompaniment estimate is what it
removed. So on any enhancement clip:

* ``mdx_sdr_voice``: output against the clean voice;
* ``mdx_sdr_music``: ``noisy - output`` against ``noisy - clean`` (the noise or
  music stem), so a passthrough scores 0 dB and an engine that removes
  everything scores the input SNR with its sign flipped;
* ``mdx_sdr``: the mean of the two stems, the challenge's record score.

No scale invariance: a voice turned down 6 dB scores at most 6 dB, whatever the
noise did. Compared over whole tracks (``--musdb-excerpt-seconds 0`` on MUSDB) the
mean over tracks is the challenge's number; over excerpts it is the mean of
per-excerpt SDRs, which weights quiet and loud passages equally.
"""
from __future__ import annotations

from typing import Callable, Iterable, Iterator

import numpy as np

from nsbench.adapters import float64_blocks, spans
from nsbench import ENHANCEMENT, MetricInputs, MetricSpec, MetricUndefined, hookimpl

# The challenge's own guard against division by zero (MDX 2021 starter kit's
# ``new_sdr``), added to both sums; negligible on any audible stem.
DELTA = 1e-7

SILENT_VOICE = "the clean voice is silent: no voice stem to score"
SILENT_MUSIC = "noisy equals clean: no accompaniment stem to score"


def mdx_sdr(estimate: np.ndarray, reference: np.ndarray) -> float:
    """Music Demixing challenge SDR of one stem in dB, in float64.

    ``10 log10((sum s^2 + delta) / (sum (s - s_hat)^2 + delta))`` with
    delta = 1e-7 (Solovyev et al. 2023; MDX 2021). Raises MetricUndefined when
    the reference is all zeros, and ValueError on a length mismatch or
    non-finite samples. Summed over float64 blocks (nsbench.audio.blocks): bounded
    memory on an hour, and the whole-array sums on a clip of up to a block.
    """
    est = np.asarray(estimate).ravel()
    ref = np.asarray(reference).ravel()
    if est.shape != ref.shape:
        raise ValueError(f"estimate has {est.size} samples, reference {ref.size}")
    return _stem_sdr(float64_blocks(est, ref))


def _stem_sdr(blocks: Iterable[tuple[np.ndarray, np.ndarray]]) -> float:
    """mdx_sdr from (estimate, reference) float64 blocks."""
    signal_energy = error_energy = 0.0
    for est, ref in blocks:
        error = ref - est
        signal_energy += float(np.dot(ref, ref))
        error_energy += float(np.dot(error, error))
    if not np.isfinite(signal_energy + error_energy):
        raise ValueError("estimate or reference has non-finite samples")
    if signal_energy == 0.0:
        raise MetricUndefined("the reference stem is silent")
    return float(10.0 * np.log10((signal_energy + DELTA) / (error_energy + DELTA)))


def _voice(inputs: MetricInputs) -> float:
    if not np.any(inputs.clean):
        raise MetricUndefined(SILENT_VOICE)
    return mdx_sdr(inputs.output, inputs.clean)


def _music_blocks(inputs: MetricInputs) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(noisy - output, noisy - clean) in float64, a block at a time."""
    if not (len(inputs.noisy) == len(inputs.clean) == len(inputs.output)):
        raise ValueError(f"noisy, clean and output differ in length: {len(inputs.noisy)}, {len(inputs.clean)}, {len(inputs.output)}")
    for span in spans(len(inputs.noisy)):
        noisy = inputs.noisy[span].astype(np.float64)
        yield noisy - inputs.output[span], noisy - inputs.clean[span]


def _music(inputs: MetricInputs) -> float:
    if not any(np.any(music) for _, music in _music_blocks(inputs)):
        raise MetricUndefined(SILENT_MUSIC)
    return _stem_sdr(_music_blocks(inputs))


def mdx_sdr_voice_metric(inputs: MetricInputs) -> float:
    return _voice(inputs)


def mdx_sdr_music_metric(inputs: MetricInputs) -> float:
    return _music(inputs)


def mdx_sdr_mean_metric(inputs: MetricInputs) -> float:
    return (_voice(inputs) + _music(inputs)) / 2.0


IGNORES = (
    "perceptual weighting (every error sample counts the same, audible or not); "
    "a constant delay or a polarity flip is punished as error; level loss is NOT ignored"
)


@hookimpl
def register_metrics(register: Callable[[MetricSpec], None]) -> None:
    common = dict(unit="dB", higher_is_better=True, tasks=(ENHANCEMENT,))
    register(MetricSpec(
        name="mdx_sdr_voice",
        func=mdx_sdr_voice_metric,
        description=(
            "Music Demixing challenge SDR of the voice stem (Solovyev et al. 2023): "
            "10log10((sum clean^2 + 1e-7) / (sum (clean - output)^2 + 1e-7)); not scale-invariant"
        ),
        ignores=IGNORES,
        needs_voice=True,
        **common,
    ))
    register(MetricSpec(
        name="mdx_sdr_music",
        func=mdx_sdr_music_metric,
        description=(
            "Music Demixing challenge SDR of the accompaniment: estimate noisy - output against "
            "noisy - clean; passthrough scores 0; undefined when noisy equals clean"
        ),
        ignores=IGNORES,
        needs_voice=False,
        **common,
    ))
    register(MetricSpec(
        name="mdx_sdr",
        func=mdx_sdr_mean_metric,
        description="Music Demixing challenge record score: mean of mdx_sdr_voice and mdx_sdr_music",
        ignores=IGNORES,
        needs_voice=True,
        **common,
    ))
