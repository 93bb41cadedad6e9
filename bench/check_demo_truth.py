#!/usr/bin/env python3
"""Does the demo tell the truth? Ranks the six real engines on the demo and on a
small check set in the DNS 2020 layout, and says how well the two agree.

    python bench/check_demo_truth.py [--work DIR]

The check set is built from what the demo does not use: the four held-out
target talkers (datasets/demo.py HELD_OUT_TALKERS: two female, two male), the
last CHECK_RESERVE_SECONDS of each real noise recording (the demo's noise
windows end before them), babble made of the demo's *target* talkers (never
the demo's babble), and fresh white and pink noise. These are the same
recordings and the same mixing code as the demo, so this is a check, not an
independent test. No music: the DNS layout has none; the demo's figures are
printed with and without its music cells.

Runs nsbench itself (RNNoise, DeepFilterNet, NSNet2, Speex, WebRTC,
noisereduce; no oracles) on both sets, then prints per engine the mean STOI
change against the passthrough (paired by clip) and the mean SI-SDRi on each
set, and the Spearman rank correlation between the sets for both. Clips come
from $NSBENCH_CACHE like any run, so a second run is quick.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile
from scipy.stats import spearmanr

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from nsbench.builtin.datasets import demo  # noqa: E402
from nsbench.cli import main as nsbench_main  # noqa: E402
from nsbench.builtin.datasets.generated_set import within_peak_limit  # noqa: E402
from nsbench.synth import noises  # noqa: E402

ENGINES = ("rnnoise", "deepfilternet", "nsnet2", "speex", "webrtc", "noisereduce")
CHECK_SEED = 11  # not the demo's: fresh offsets, fresh white and pink noise
SIGN_MARGIN_DB = 0.5  # opposite SI-SDRi signs count only beyond this
TARGET_RHO = 0.9  # six engines: one adjacent swap still reaches it


def check_clip(rng: np.random.Generator, target: str, interference: str, snr_db: int,
               recordings: dict[str, demo.Recording]) -> tuple[np.ndarray, np.ndarray]:
    """(noisy, clean) for one check clip, mixed as the demo mixes."""
    bundle, length = demo.BUNDLE_FOLDER, int(demo.CLIP_SECONDS * demo.SAMPLE_RATE)
    clean = demo.voice(rng, demo.bundled_audio(str(bundle / target)), length)
    if interference == "babble":
        talkers = [f for files in demo.demo_talkers(recordings).values() for f in files]
        count = int(rng.integers(demo.BABBLE_TALKERS[0], demo.BABBLE_TALKERS[1] + 1))
        chosen = rng.choice(len(talkers), size=count, replace=False)
        raw = demo.babble(rng, [str(bundle / talkers[i]) for i in sorted(chosen)], length)
    elif interference in ("white", "pink"):
        raw = noises.NOISE_KINDS[interference](rng, length, demo.SAMPLE_RATE)
    else:
        audio = demo.bundled_audio(str(bundle / f"noise/{interference}.flac"))
        reserve = audio[len(audio) - int(demo.CHECK_RESERVE_SECONDS * demo.SAMPLE_RATE):]
        raw = demo.window(rng, reserve, length)
    noise = noises.mix_at_snr(clean, raw, float(snr_db))[1]
    noisy, clean, _ = within_peak_limit(clean, noise)
    return noisy, clean


def build_check_set(folder: Path) -> int:
    """The check set in the DNS 2020 layout (16-bit WAV, as DNS ships); its clip count."""
    recordings = demo.read_recordings(demo.BUNDLE_FOLDER)
    targets = sorted(f for f, r in recordings.items() if r.talker in demo.HELD_OUT_TALKERS)
    real_noises = sorted(Path(f).stem for f, r in recordings.items() if r.category == "noise")
    kinds = [*real_noises, "white", "pink", "babble"]
    file_id = 0
    for talker_index, target in enumerate(targets):
        for kind_index, kind in enumerate(kinds):
            snr = demo.SNRS_DB[(talker_index + kind_index) % len(demo.SNRS_DB)]
            noisy, clean = check_clip(np.random.default_rng([CHECK_SEED, file_id]), target, kind, snr, recordings)
            # A DNS-style noise stem: category words, then numbers (the adapter's noise label).
            stem = f"{kind}_{recordings[target].talker.split('-')[1]}_{kind_index}"
            for path, audio in ((folder / "clean" / f"clean_fileid_{file_id}.wav", clean),
                                (folder / "noisy" / f"clnsp{file_id}_{stem}_snr{snr}_tl-26_fileid_{file_id}.wav", noisy)):
                path.parent.mkdir(parents=True, exist_ok=True)
                soundfile.write(str(path), audio, demo.SAMPLE_RATE, subtype="PCM_16")
            file_id += 1
    return file_id


def run(results: Path, *dataset: str) -> None:
    argv = [*dataset, "--results-folder", str(results), "--metric", "si_sdri", "--metric", "stoi",
            "--no-plots", "--no-html", "--quiet"]
    for engine in ENGINES:
        argv += ["--engine", engine]
    if nsbench_main(argv) != 0:
        raise SystemExit(f"nsbench failed on {dataset or 'demo'}")


def rows(path: Path) -> dict[str, dict]:
    return {row["clip_id"]: row for row in map(json.loads, path.read_text().splitlines()) if not row["error"]}


def figures(folder: Path, keep=lambda labels: True) -> dict[str, tuple[float, float]]:
    """engine -> (mean STOI change against the passthrough, mean SI-SDRi) over noisy voice clips."""
    baseline = rows(folder / "passthrough.clips.jsonl")
    out = {}
    for engine in ENGINES:
        clips = [r for r in rows(folder / f"{engine}.clips.jsonl").values() if "si_sdri" in r["scores"] and keep(r["labels"])]
        stoi = [r["scores"]["stoi"] - baseline[r["clip_id"]]["scores"]["stoi"] for r in clips
                if "stoi" in r["scores"] and "stoi" in baseline[r["clip_id"]]["scores"]]
        out[engine] = (float(np.mean(stoi)), float(np.mean([r["scores"]["si_sdri"] for r in clips])))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, help="folder for the check set and results (default: a temporary one)")
    opts = parser.parse_args()
    work = opts.work or Path(tempfile.mkdtemp(prefix="nsbench-truth-"))
    check = work / "dns-layout-check"
    if not (check / "clean").is_dir():
        count = build_check_set(check)
        print(f"check set: {count} pairs in {check}", file=sys.stderr)
    run(work / "results")
    run(work / "results", "--dataset", "dns2020", "--data-folder", str(check))
    on_demo = figures(work / "results" / "demo")
    without_music = figures(work / "results" / "demo", lambda labels: labels["noise"] != "music")
    on_check = figures(work / "results" / "dns2020")
    print("| engine | STOI change: demo | demo w/o music | check | SI-SDRi: demo | demo w/o music | check |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for engine in ENGINES:
        (sd, gd), (sm, gm), (sc, gc) = on_demo[engine], without_music[engine], on_check[engine]
        print(f"| {engine} | {sd:+.3f} | {sm:+.3f} | {sc:+.3f} | {gd:+.1f} | {gm:+.1f} | {gc:+.1f} |")
    for index, name in ((0, "STOI change"), (1, "SI-SDRi")):
        for label, figures_ in (("demo", on_demo), ("demo w/o music", without_music)):
            rho = spearmanr([figures_[e][index] for e in ENGINES], [on_check[e][index] for e in ENGINES])[0]
            print(f"Spearman rank correlation, {name}, {label} vs check: {rho:.2f}")
    opposite = [e for e in ENGINES if on_demo[e][1] * on_check[e][1] < 0 and min(abs(on_demo[e][1]), abs(on_check[e][1])) > SIGN_MARGIN_DB]
    print(f"engines whose SI-SDRi has opposite signs beyond {SIGN_MARGIN_DB} dB: {', '.join(opposite) or 'none'}")
    print(f"(aim: SI-SDRi rank correlation >= {TARGET_RHO}; a check on the same recordings, not an independent test)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
