"""Each dataset adapter's figures against its official script's aggregation,
computed here the official way on a fixture in the published layout (FUSS has
its own file, test_fuss_pooling.py). The per-clip metric formulas are written
out here too, from the sources each adapter's docstring cites; nothing goes
through nsbench.report.summary.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest
import soundfile
import soxr

from nsbench.cli import main
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.specs import EngineSpec

from tests.helpers.audio import make_folder_dataset
from tests.helpers.lazy import LazyModule
from tests.helpers.dns_layouts import NOISY_NAMES, make_dns, make_voicebank
from tests.helpers.dataset_layouts import SNR_ITEMS, TRACKS, make_musdb, write_bio_set

pystoi = LazyModule("pystoi")
scipy = LazyModule("scipy")
QUICK = ["--engine", "passthrough", "--quiet", "--no-html", "--no-plots", "--jobs", "1", "--no-cache"]


def run(tmp_path: Path, dataset: str, data: Path, *extra: str, engine: str = "passthrough",
        plugins: tuple[object, ...] = ()) -> tuple[dict, list[dict]]:
    assert main(["--dataset", dataset, "--data-folder", str(data), "--results-folder", str(tmp_path / "r"), *QUICK, *extra],
                plugins=plugins) == 0
    folder = tmp_path / "r" / dataset
    rows = [json.loads(line) for line in (folder / f"{engine}.clips.jsonl").read_text().splitlines()]
    return json.loads((folder / f"{engine}.json").read_text()), rows


def read(path: Path, dtype: str = "float64") -> np.ndarray:
    return soundfile.read(str(path), dtype=dtype)[0]


def test_dns2020_mean_stoi_and_rtf_as_picovoice(tmp_path):
    # Picovoice benchmark.py 40-44 and 113-114: per file pystoi on soundfile's
    # float64 reading, then np.mean; RTF the mean of per-file ratios.
    root = make_dns(tmp_path / "no_reverb", NOISY_NAMES[:4], seconds=1.5)
    result, rows = run(tmp_path, "dns2020", root, "--metric", "stoi", "--metric", "rtf_cpu")
    official = []
    for name in NOISY_NAMES[:4]:
        ident = name.rsplit("fileid_", 1)[1]
        clean = read(root / "clean" / f"clean_fileid_{ident}")
        official.append(pystoi.stoi(clean, read(root / "noisy" / name), 16000, extended=False))  # passthrough: out = noisy
    assert result["stoi"] == pytest.approx(np.mean(official), abs=1e-6)
    # Equal-length files: the ratio of totals nsbench reports is the mean of per-file ratios.
    assert result["rtf"] == pytest.approx(np.mean([r["cpu_seconds"] / r["duration"] for r in rows]), rel=1e-9)


def test_voicebank_means_over_utterances_at_16k(tmp_path):
    # Per utterance at 16 kHz (soxr HQ, librosa's default), then statistics.mean:
    # STOI and zero-mean SI-SNR as edge-speech-denoising-benchmark's evaluate computes them.
    root = make_voicebank(tmp_path / "vb", seconds=1.5)
    result, _ = run(tmp_path, "voicebank", root, "--metric", "stoi", "--metric", "si_sdr_zm")
    stoi, sisnr = [], []
    for noisy_path in sorted((root / "noisy_testset_wav").glob("*.wav")):
        clean, noisy = (soxr.resample(read(folder / noisy_path.name, "float32"), 48000, 16000, quality="HQ")
                        for folder in (root / "clean_testset_wav", root / "noisy_testset_wav"))
        stoi.append(pystoi.stoi(clean, noisy, 16000, extended=False))
        reference, estimate = clean.astype(np.float64) - clean.mean(), noisy.astype(np.float64) - noisy.mean()
        target = reference * np.dot(estimate, reference) / np.dot(reference, reference)
        sisnr.append(10 * np.log10(np.dot(target, target) / np.dot(estimate - target, estimate - target)))
    assert result["metrics"]["stoi"]["mean"] == pytest.approx(statistics.mean(stoi), abs=1e-6)
    assert result["metrics"]["si_sdr_zm"]["mean"] == pytest.approx(statistics.mean(sisnr), abs=1e-4)


class HalfLevel:
    """Returns half the input: the voice loses 6 dB, the accompaniment estimate keeps half."""

    @hookimpl
    def register_engines(self, register):
        class Half:
            sample_rate, delay = None, 0

            def process(self, audio):
                return (0.5 * audio).astype(np.float32)

            def close(self):
                pass

        register(EngineSpec(name="half", factory=lambda options: Half(), description="test: half level",
                            sample_rate=None, delay=0, default=False))


def test_musdb_mean_over_stems_then_over_tracks_as_the_mdx_kit(tmp_path):
    # evaluator/music_demixing.py scoring(): SDR with delta 1e-7 per stem, a
    # track's mean over its stems, then the mean over tracks; on nsbench's two
    # mono stems and whole tracks (--musdb-excerpt-seconds 0).
    root = make_musdb(tmp_path / "musdb18hq", seconds=1.5)
    result, _ = run(tmp_path, "musdb", root, "--engine", "half", "--musdb-excerpt-seconds", "0",
                    "--metric", "mdx_sdr", "--metric", "mdx_sdr_voice", engine="half",
                    plugins=(HalfLevel(),))

    def sdr(reference: np.ndarray, estimate: np.ndarray) -> float:
        delta = 1e-7
        return 10 * np.log10((np.sum(reference**2) + delta) / (np.sum((reference - estimate) ** 2) + delta))

    tracks = []
    for track in TRACKS:
        stems = {name: read(root / "test" / track / f"{name}.wav").mean(axis=1) for name in ("vocals", "drums", "bass", "other")}
        voice, music = stems["vocals"], stems["drums"] + stems["bass"] + stems["other"]
        output = 0.5 * (voice + music)
        tracks.append(np.mean([sdr(voice, output), sdr(music, voice + music - output)]))
    assert result["clips"] == len(TRACKS)
    assert result["metrics"]["mdx_sdr"]["mean"] == pytest.approx(np.mean(tracks), abs=1e-5)


def test_biodenoising_mean_median_and_mad_as_evaluate_and_results(tmp_path):
    # evaluate.py 85-92: torchmetrics SI-SDR (no mean removal, float32 eps);
    # 154-155 mean and median over files; results.py 28-29 median and scipy's
    # unscaled median_abs_deviation.
    root = tmp_path / "biodenoising_validation"
    write_bio_set(root / "16000", SNR_ITEMS, 16000)
    result, _ = run(tmp_path, "biodenoising", root, "--biodenoising-rate", "16000", "--metric", "si_sdr")
    eps = float(np.finfo(np.float32).eps)
    official = []
    for name in SNR_ITEMS:
        clean, noisy = read(root / "16000" / "clean" / name), read(root / "16000" / "noisy" / name)
        alpha = (np.dot(noisy, clean) + eps) / (np.dot(clean, clean) + eps)
        target = alpha * clean
        official.append(10 * np.log10((np.dot(target, target) + eps) / (np.dot(target - noisy, target - noisy) + eps)))
    stats = result["metrics"]["si_sdr"]
    assert stats["mean"] == pytest.approx(np.mean(official), abs=1e-4)
    assert stats["median"] == pytest.approx(np.median(official), abs=1e-4)
    assert stats["mad"] == pytest.approx(scipy.stats.median_abs_deviation(official), abs=1e-4)


def independent_si_sdr(estimate: np.ndarray, reference: np.ndarray) -> float:
    """REFERENCE section 1, no mean removal."""
    target = reference * np.dot(estimate, reference) / np.dot(reference, reference)
    return 10 * np.log10(np.dot(target, target) / np.dot(estimate - target, estimate - target))


def test_folder_mean_median_and_mad_over_clips(tmp_path):
    # No official script: nsbench's protocol, each clip once.
    root = make_folder_dataset(tmp_path / "set", count=4)
    result, _ = run(tmp_path, "folder", root, "--metric", "si_sdr")
    values = [independent_si_sdr(read(root / "noisy" / f"utt{i}.wav"), read(root / "clean" / f"utt{i}.wav")) for i in range(4)]
    stats = result["metrics"]["si_sdr"]
    assert stats["n"] == 4 and stats["mean"] == pytest.approx(np.mean(values), abs=1e-6)
    assert stats["median"] == pytest.approx(np.median(values), abs=1e-6)
    assert stats["mad"] == pytest.approx(scipy.stats.median_abs_deviation(values), abs=1e-6)


def test_demo_cell_means_over_clips(tmp_path, demo_sources):
    # No official script: per cell the mean over its clips, each clip once.
    result = json.loads((run_demo(tmp_path) / "passthrough.json").read_text())
    by_cell: dict[tuple, list[float]] = {}
    for source in demo_sources[:3]:
        clip = source.load()
        value = independent_si_sdr(clip.noisy.astype(np.float64), clip.clean.astype(np.float64))
        by_cell.setdefault(tuple(source.labels[k] for k in ("noise", "snr_db")), []).append(value)
    for row in result["cells"]:
        values = by_cell.pop((row["cell"]["noise"], row["cell"]["snr_db"]))
        assert row["metrics"]["si_sdr"]["mean"] == pytest.approx(np.mean(values), abs=1e-6)
    assert not by_cell


def run_demo(tmp_path: Path) -> Path:
    assert main(["--dataset", "demo", "--limit", "3", "--metric", "si_sdr", "--results-folder", str(tmp_path / "r"), *QUICK]) == 0
    return tmp_path / "r" / "demo"
