"""Bad audio, generated here, through the CLI with the folder dataset.

Every case ends in a recorded failure with its exact reason, or in a
documented treatment (downmix, resample, trim, a note) whose scores are the
ones that treatment implies; the good clips score exactly as in a run without
the bad ones. Engines: the passthrough baseline and a real one (speex).
"""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Callable

import numpy as np
import pytest
import soundfile

from nsbench.audio.files import resample
from nsbench.builtin.metrics.sisdr import si_sdr
from nsbench.cli import main

from tests.helpers.audio import tone_and_noise, write_wav

RATE = 16000
ENGINES = ("passthrough", "speex")
TIMING = {"rtf_cpu", "rtf_wall"}
# --no-cache: the good clips must be computed again beside the bad ones, not served from the first run.
CLEAN_FLAGS = ["--engine", "speex", "--jobs", "1", "--quiet", "--no-plots", "--no-html", "--no-cache"]


def pair(seed: int = 0, seconds: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    clean, noise = tone_and_noise(seed, seconds=seconds)
    return clean + noise, clean


def both(root: Path, name: str, noisy: np.ndarray, clean: np.ndarray, subtype: str = "FLOAT", suffix: str = ".wav",
         noisy_rate: int = RATE, clean_rate: int = RATE) -> tuple[Path, Path]:
    return (write_wav(root / "noisy" / f"{name}{suffix}", noisy, noisy_rate, subtype),
            write_wav(root / "clean" / f"{name}{suffix}", clean, clean_rate, subtype))


def good(root: Path) -> None:
    for index, name in enumerate(("good_a", "good_b")):
        both(root, name, *pair(10 + index))


# ------------------------------------------------------------------ the cases
# Each writer makes one clip under root and returns what the test expects:
# ("failed", reason) or ("treated", notes, check), where check(record) tests
# the scores the treatment implies.

def with_noisy_bytes(data: bytes) -> Callable[[Path, str], tuple]:
    def write(root: Path, name: str):
        noisy, clean = both(root, name, *pair())
        noisy.write_bytes(data)
        return noisy
    return write


def empty(root, name):
    noisy = with_noisy_bytes(b"")(root, name)
    return "failed", f"cannot read {noisy}: the file is empty (0 bytes)"


def truncated_header(root, name):
    noisy = with_noisy_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt ")(root, name)
    return "failed", f"cannot read {noisy}: Error in WAV file. No 'data' chunk marker"


def not_audio(root, name):
    noisy = with_noisy_bytes(b"this is a text file with a .wav name\n" * 20)(root, name)
    return "failed", f"cannot read {noisy}: Format not recognised"


def zero_length(root, name):
    noisy, _ = both(root, name, np.zeros(0, np.float32), np.zeros(0, np.float32))
    return "failed", f"{noisy} holds no samples"


def one_sample(root, name):
    both(root, name, np.array([0.3], np.float32), np.array([0.2], np.float32))
    return "failed", "the clip is 1 sample long at 16000 Hz; nsbench needs at least 20 ms (320 samples) to run an engine on it"


def nan_input(root, name):
    noisy, clean = pair()
    noisy[100], noisy[2000] = np.nan, np.inf
    path, _ = both(root, name, noisy, clean)
    return "failed", f"{path} contains 2 NaN or Inf samples (the first at sample 100)"


def nan_reference(root, name):
    noisy, clean = pair()
    clean[7] = np.nan
    _, path = both(root, name, noisy, clean)
    return "failed", f"{path} contains 1 NaN or Inf sample (the first at sample 7)"


def read(path: Path) -> np.ndarray:
    return soundfile.read(str(path), dtype="float32", always_2d=True)[0].mean(axis=1, dtype=np.float32)


def input_score(noisy: np.ndarray, clean: np.ndarray) -> Callable[[dict], None]:
    """The treatment is right if the input's SI-SDR is that of these arrays
    (to float64 rounding: BLAS sums in an order that depends on memory alignment)."""
    expected = pytest.approx(si_sdr(noisy, clean), rel=1e-12)

    def check(record):
        assert record["scores"]["si_sdr_input"] == expected
        if record["engine"] == "passthrough":
            assert record["scores"]["si_sdr"] == expected and record["scores"]["si_sdri"] == 0.0
    return check


def file_format(subtype: str, suffix: str = ".wav"):
    def write(root, name):
        noisy, clean = both(root, name, *pair(), subtype=subtype, suffix=suffix)
        return "treated", [], input_score(read(noisy), read(clean))
    return write


def truncated_data(root, name):
    noisy, clean = both(root, name, *pair(), subtype="PCM_16")
    data = noisy.read_bytes()
    noisy.write_bytes(data[: 44 + 2 * 6000 + 1])  # the header, 6000 samples and half of the next
    kept = read(noisy)
    assert len(kept) == 6000
    return "treated", ["lengths differ (noisy 6000, clean 16000 samples): trimmed to 6000"], input_score(kept, read(clean)[:6000])


def three_channels(root, name):
    noisy, clean = pair()
    channels = np.stack([noisy, clean, 0.5 * noisy], axis=1)
    both(root, name, channels, clean)
    return "treated", [f"{name}.wav: 3 channels downmixed to mono"], input_score(channels.mean(axis=1, dtype=np.float32), clean)


def clean_shorter(root, name):
    noisy, clean = pair()
    both(root, name, noisy, clean[:15000])
    return "treated", ["lengths differ (noisy 16000, clean 15000 samples): trimmed to 15000"], input_score(noisy[:15000], clean[:15000])


def clean_at_8k(root, name):
    noisy, clean = pair()
    both(root, name, noisy, clean[::2].copy(), clean_rate=8000)
    expected = resample(clean[::2].copy(), 8000, RATE)
    return "treated", ["clean resampled from 8000 Hz to 16000 Hz"], input_score(noisy, expected)


def noisy_at_48k(root, name):
    clean_48k, noise_48k = tone_and_noise(0, seconds=1.0, rate=48000)
    noisy, clean = clean_48k + noise_48k, pair()[1]
    both(root, name, noisy, clean, noisy_rate=48000)
    # The clip's rate is the noisy file's; speex (16 kHz) is resampled into and out of it.
    return "treated", ["clean resampled from 16000 Hz to 48000 Hz"], input_score(noisy, resample(clean, RATE, 48000))


def silent_reference(root, name):
    noisy, clean = pair()
    both(root, name, noisy, np.zeros_like(clean))
    voice_metrics = {"si_sdr", "si_sdr_zm", "si_sdr_input", "si_sdri", "snr", "stoi", "estoi", "voice_level_db", "mdx_sdr_voice", "mdx_sdr"}

    def check(record):
        # A clip without voice, like the demo's music-only clips: the engine should output silence.
        assert {k: v for k, v in record["undefined"].items() if k in voice_metrics} == dict.fromkeys(voice_metrics, "no voice in this clip")
        assert set(record["scores"]) == {"music_attenuation_db", "mdx_sdr_music", *TIMING}
        if record["engine"] == "passthrough":
            assert record["scores"]["music_attenuation_db"] == 0.0
    return "treated", [], check


def clipped(root, name):
    noisy, clean = pair()
    path, clean_path = both(root, name, np.clip(8 * noisy, -1, 1), clean, subtype="PCM_16")
    kept = read(path)
    count = int(np.count_nonzero((kept >= 32767 / 32768) | (kept <= -1.0)))
    assert count > 500
    return "treated", [f"noisy reaches full scale on {count} samples (a clipped recording?): scored as it is"], input_score(kept, read(clean_path))


def beyond_full_scale(root, name):
    noisy, clean = pair()
    loud = 8 * noisy
    both(root, name, loud, clean)
    beyond = int(np.count_nonzero(np.abs(loud) > 1))
    at = int(np.count_nonzero((loud >= 32767 / 32768) | (loud <= -1.0))) - beyond
    note = (f"noisy reaches full scale on {at} samples and goes beyond it (|x| > 1) on {beyond} samples: "
            "scored as it is; engines that take 16-bit audio clip them") if at else (
            f"noisy goes beyond it (|x| > 1) on {beyond} samples: scored as it is; engines that take 16-bit audio clip them")
    return "treated", [note], input_score(loud, clean)


def short_200ms(root, name):
    noisy, clean = pair(seconds=0.2)
    both(root, name, noisy, clean)
    reason = "the clip lasts 200.0 ms; STOI needs more than 409.6 ms (30 frames of pystoi's at 10 kHz)"

    def check(record):
        assert record["undefined"]["stoi"] == reason and record["undefined"]["estoi"] == reason
        input_score(noisy, clean)(record)
    return "treated", [], check


CASES = {
    "empty": empty,
    "truncated_header": truncated_header,
    "not_audio": not_audio,
    "zero_length": zero_length,
    "one_sample": one_sample,
    "nan_input": nan_input,
    "nan_reference": nan_reference,
    "truncated_data": truncated_data,
    "pcm_u8": file_format("PCM_U8"),
    "pcm_24": file_format("PCM_24"),
    "float32": file_format("FLOAT"),
    "flac": file_format("PCM_16", ".flac"),
    "three_channels": three_channels,
    "clean_shorter": clean_shorter,
    "clean_at_8k": clean_at_8k,
    "noisy_at_48k": noisy_at_48k,
    "silent_reference": silent_reference,
    "clipped": clipped,
    "beyond_full_scale": beyond_full_scale,
    "short_200ms": short_200ms,
}


def run(data: Path, results: Path, *flags: str) -> tuple[int, str]:
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        code = main(["--dataset", "folder", "--data-folder", str(data), "--results-folder", str(results), *CLEAN_FLAGS, *flags])
    return code, stderr.getvalue()


def rows(results: Path, engine: str) -> dict[str, dict]:
    lines = (results / "folder" / f"{engine}.clips.jsonl").read_text().splitlines()
    return {row["clip_id"]: row for row in map(json.loads, lines)}


def without_timing(scores: dict[str, float]) -> dict[str, float]:
    return {name: value for name, value in scores.items() if name not in TIMING}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A run on the good clips alone, and one with every bad case beside them."""
    alone, mixed = tmp_path_factory.mktemp("alone") / "set", tmp_path_factory.mktemp("mixed") / "set"
    good(alone)
    good(mixed)
    expected = {name: write(mixed, name) for name, write in CASES.items()}
    results = tmp_path_factory.mktemp("results")
    code_alone, _ = run(alone, results / "alone")
    code, stderr = run(mixed, results / "mixed")
    return {"codes": (code_alone, code), "stderr": stderr, "expected": expected, "results": results}


def test_the_run_finishes_and_counts_exactly_the_failures(runs):
    # Every result is written, then the run exits 4: some clips failed (nsbench.report.failures).
    assert runs["codes"] == (0, 4)
    failed = [(name, outcome[1]) for name, outcome in sorted(runs["expected"].items()) if outcome[0] == "failed"]
    for engine in ENGINES:
        result = json.loads((runs["results"] / "mixed" / "folder" / f"{engine}.json").read_text())
        assert result["clips"] == len(CASES) + 2 and result["failures"] == len(failed)
        assert [(f["clip_id"], f["error"]) for f in result["failed_clips"]] == failed
        for name, reason in failed:
            assert f"nsbench: {engine} failed on {name}: {reason}\n" in runs["stderr"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_case_fails_with_its_reason_or_is_treated_and_noted(runs, name):
    expected = runs["expected"][name]
    for engine in ENGINES:
        record = rows(runs["results"] / "mixed", engine)[name]
        if expected[0] == "failed":
            assert (record["error"], record["scores"]) == (expected[1], {})
        else:
            _, notes, check = expected
            assert record["error"] is None and record["notes"] == notes
            check(record)


def test_the_good_clips_score_as_in_a_run_without_the_bad_ones(runs):
    for engine in ENGINES:
        alone, mixed = rows(runs["results"] / "alone", engine), rows(runs["results"] / "mixed", engine)
        assert set(alone) == {"good_a", "good_b"}
        for clip_id, row in alone.items():
            assert without_timing(mixed[clip_id]["scores"]).keys() == without_timing(row["scores"]).keys() != set()
            for name, value in without_timing(row["scores"]).items():
                assert mixed[clip_id]["scores"][name] == value, name
            assert mixed[clip_id]["undefined"] == row["undefined"] and mixed[clip_id]["notes"] == []


def test_a_three_minute_file_runs_with_cheap_metrics(tmp_path):
    noisy, clean = pair(seconds=180.0)
    both(tmp_path / "long", "three_minutes", noisy, clean)
    metrics = [flag for name in ("si_sdr", "si_sdri", "voice_level_db", "rtf_cpu") for flag in ("--metric", name)]
    code, _ = run(tmp_path / "long", tmp_path / "results", *metrics)
    assert code == 0
    for engine in ENGINES:
        [record] = rows(tmp_path / "results", engine).values()
        assert record["error"] is None and record["duration"] == 180.0
        assert set(record["scores"]) == {"si_sdr", "si_sdri", "voice_level_db", "rtf_cpu"}
    passthrough = rows(tmp_path / "results", "passthrough")["three_minutes"]["scores"]
    assert passthrough["si_sdr"] == pytest.approx(si_sdr(noisy, clean), rel=1e-12) and passthrough["si_sdri"] == 0.0
