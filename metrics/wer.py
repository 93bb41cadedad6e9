"""``wer``: does the engine help speech recognition, or do its artefacts hurt it?

Word error rate (substitutions + deletions + insertions over reference words,
computed by jiwer after ``nsbench.adapters.normalise_transcript``) of a
recogniser's transcript of the engine's output (``wer``) and of the noisy input
(``wer_input``), and their difference (``wer_delta``; negative: the engine
helped). The recogniser is PocketSphinx 5 with the US-English acoustic model,
language model and dictionary its wheel ships (no download); ``--recogniser
NAME`` picks another registered through ``register_recognisers``.

The reference is the clip's transcript where the dataset knows one
(``wer_reference: "dataset"``); otherwise the recogniser's own transcript of
the clean signal (``wer_reference: "asr_of_clean"``), which measures the damage
done to what the recogniser could hear, not its accuracy.
"""
from __future__ import annotations

import time
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from nsbench import MetricContext, MetricInputs, MetricSpec, RecogniserSpec, UserError, adapters, hookimpl
from nsbench.adapters import cache_root, file_digest, json_text
from nsbench import Column

DEFAULT_RECOGNISER = "pocketsphinx"
POCKETSPHINX_VERSION = "5.1.1"
JIWER_VERSION = "4.0.0"
INSTALL = f"pip install pocketsphinx=={POCKETSPHINX_VERSION} jiwer=={JIWER_VERSION}"
INT16_FULL_SCALE = 32767
FROM_DATASET, ASR_OF_CLEAN = "dataset", "asr_of_clean"


# --------------------------------------------------------------------------- PocketSphinx


def pocketsphinx_model_files() -> list[str]:
    """The wheel's US-English model: acoustic model folder, language model, dictionary."""
    from pocketsphinx import get_model_path

    model = Path(get_model_path()) / "en-us"
    acoustic = sorted(str(path) for path in (model / "en-us").iterdir() if path.is_file())
    return [*acoustic, str(model / "en-us.lm.bin"), str(model / "cmudict-en-us.dict")]


# PocketSphinx's settings that differ from its defaults, and why:
# - cmn "batch": the cepstral mean is that of the whole clip. The default,
#   "live", carries a running mean from one utterance to the next, so a clip's
#   transcript would depend on the clips transcribed before it (and the cache
#   would keep whichever came first).
# - maxhmmpf 3000 (default 30000): at most 3000 active HMMs per frame. On noisy
#   speech the search otherwise explodes: a 3.9 s clip at -5 dB took 11 CPU s,
#   3.2 s with the limit; clean speech reads the same with it.
POCKETSPHINX_SETTINGS = {"cmn": "batch", "maxhmmpf": 3000}
PER_CLIP_RESET = "features reset per clip"  # PocketSphinx.transcribe; in the version: new transcript keys


class PocketSphinx:
    """PocketSphinx's decoder (POCKETSPHINX_SETTINGS), one utterance per clip, 16 kHz int16."""

    def __init__(self) -> None:
        from pocketsphinx import Decoder

        self.decoder = Decoder(loglevel="FATAL", **POCKETSPHINX_SETTINGS)

    def transcribe(self, audio: np.ndarray) -> str:
        pcm = np.round(np.clip(audio, -1.0, 1.0) * INT16_FULL_SCALE).astype("<i2")
        # The noise removal's statistics otherwise carry over from the clips
        # decoded before in this process (8 of 12 noisy ARCTIC clips read
        # differently after others): reset with the feature extraction, 0.04 ms.
        self.decoder.reinit_feat()
        self.decoder.start_utt()
        self.decoder.process_raw(pcm.tobytes(), full_utt=True)
        self.decoder.end_utt()
        hypothesis = self.decoder.hyp()
        return hypothesis.hypstr if hypothesis is not None else ""


def jiwer_version() -> str:
    return f"jiwer {metadata.version('jiwer')}"


def pocketsphinx_version() -> str:
    """The package's version and our settings: both change its transcripts
    (and key the stored ones: those from before the per-clip reset differ)."""
    settings = " ".join(f"{key}={value}" for key, value in POCKETSPHINX_SETTINGS.items())
    return f"{metadata.version('pocketsphinx')} ({settings}, {PER_CLIP_RESET})"


# --------------------------------------------------------------------------- the metric


def wer_options(flags: Mapping[str, Any], context: MetricContext) -> dict[str, Any]:
    """The recogniser named by --recogniser (this plugin's flag), built once
    here (worker processes inherit it), with its name, version and model
    hashes for the provenance and the cache keys; the transcripts' cache
    follows --no-cache and --rerun (the context's)."""
    record = context.recogniser(flags.get("recogniser") or DEFAULT_RECOGNISER)
    spec = record.spec
    provenance = {
        "recogniser": spec.name,
        "version": record.version,
        "origin": record.origin,
        "sample_rate": spec.sample_rate,
        "model_files": {path: file_digest(path) for path in spec.model_files()},
        "jiwer": metadata.version("jiwer"),
    }
    try:
        adapters.built_recogniser(spec)
    except Exception as error:
        raise UserError(f"recogniser '{spec.name}' could not start: {type(error).__name__}: {error}") from error
    fresh_after = time.time() if context.rerun else 0.0
    return {
        "recogniser": spec,
        "fingerprint": json_text({key: value for key, value in provenance.items() if key != "origin"}),
        "provenance": provenance,
        # --no-cache: shared within a process only (one engine's clips).
        "transcripts": None if not context.use_cache else str(cache_root() / adapters.TRANSCRIPTS_FOLDER),
        "fresh_after": fresh_after,
    }


def wer(inputs: MetricInputs) -> dict[str, float | str]:
    store = adapters.store_from_options(inputs.options)
    rate = inputs.sample_rate
    if inputs.transcript is not None:
        reference, source = inputs.transcript, FROM_DATASET
    else:
        reference, source = store.transcript(inputs.clean, rate), ASR_OF_CLEAN
    output = adapters.word_error_rate(reference, store.transcript(inputs.output, rate))
    noisy = adapters.word_error_rate(reference, store.transcript(inputs.noisy, rate))
    return {"wer": output, "wer_input": noisy, "wer_delta": output - noisy, "wer_reference": source}


@hookimpl
def add_arguments(parser):
    parser.add_argument(
        "--recogniser", default=DEFAULT_RECOGNISER, metavar="NAME",
        help=f"speech recogniser of the wer metric (default {DEFAULT_RECOGNISER}; --list recognisers)",
    )


@hookimpl
def register_recognisers(register):
    register(
        RecogniserSpec(
            name="pocketsphinx",
            factory=PocketSphinx,
            description="PocketSphinx 5, US-English model, LM and dictionary from its wheel (offline)",
            model_files=pocketsphinx_model_files,
            requires=("pocketsphinx",),
            install=INSTALL,
            version=pocketsphinx_version,
        )
    )


@hookimpl
def register_metrics(register):
    register(
        MetricSpec(
            name="wer",
            func=wer,
            unit="fraction",
            higher_is_better=False,
            category="downstream",  # the value "wer" only: wer_input is the input's, wer_delta ranks as wer
            description="word error rate of a speech recogniser (--recogniser) on the output",
            ignores="everything the recogniser does not hear; against its own clean transcript where the dataset has no text",
            requires=("jiwer",),  # the recogniser declares its own
            install=INSTALL,
            version=jiwer_version,
            default=False,  # 0.35-0.8 CPU s per audio second per transcript: see bench/bench_wer.py
            values={
                "wer": "word error rate of the engine's output",
                "wer_input": "word error rate of the noisy input",
                "wer_delta": "wer - wer_input (negative: the engine helped recognition)",
            },
            options=wer_options,
            columns={"wer_input": Column("WER in", 3, 70), "wer": Column("WER out", 3, 80), "wer_delta": Column("WER delta", 3, 90)},
        )
    )
