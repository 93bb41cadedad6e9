#!/usr/bin/env python3
"""Throughput of the dns2020 and voicebank adapters, alone and through the CLI.

    python bench/bench_datasets.py [--metric NAME ...] [--keep]

Generates, in a temporary folder, a DNS 2020 synthetic test set of realistic
size (150 ten-second int16 16 kHz pairs with the 150 real noisy file names,
noise at each file's SNR) and a VoiceBank-DEMAND test set of 824 two-second
48 kHz pairs. Prints, for each: loading every clip through the adapter
(ClipSource.load, no engine, no metric), and the passthrough run end to end
through the CLI: original files, with --remix-snr-db 0 5 on a cold remix cache,
then again on the warm cache. Figures are clips/s and audio-seconds/s (seconds
of noisy input handled per wall-clock second).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NAMES_FILE = Path(__file__).resolve().parents[1] / "tests" / "data" / "dns2020_noisy_names.txt"
DNS_SECONDS, DNS_RATE = 10.0, 16000
VB_FILES, VB_SECONDS, VB_RATE = 824, 2.0, 48000
VB_NOISES, VB_SNRS = ("bus", "cafe", "living", "office", "psquare"), ("2.5", "7.5", "12.5", "17.5")
DEFAULT_METRICS = ("si_sdr", "stoi")  # Picovoice's metric and the cheapest full-clip one


def speechlike(rng: np.random.Generator, samples: int, rate: int) -> np.ndarray:
    """Harmonic bursts with pauses: frames differ in power, as speech does."""
    t = np.arange(samples) / rate
    f0 = 90 + 120 * rng.random()
    tone = sum(np.sin(2 * np.pi * f0 * k * t + rng.random()) / k for k in range(1, 8))
    syllables = np.clip(np.sin(2 * np.pi * rng.uniform(2, 4) * t), 0, None) ** 2
    return 0.08 * tone * syllables


def write_pair(clean_path: Path, noisy_path: Path, clean: np.ndarray, noise: np.ndarray, snr_db: float, rate: int) -> None:
    noise = noise * np.sqrt(np.sum(clean**2) / np.sum(noise**2) / 10 ** (snr_db / 10))
    peak = max(1.0, float(np.max(np.abs(clean + noise))) / 0.99)
    for path, audio in ((clean_path, clean / peak), (noisy_path, (clean + noise) / peak)):
        path.parent.mkdir(parents=True, exist_ok=True)
        soundfile.write(str(path), audio, rate, subtype="PCM_16")


def make_dns(root: Path) -> Path:
    samples = int(DNS_SECONDS * DNS_RATE)
    for name in NAMES_FILE.read_text().split():
        ident = int(re.search(r"fileid_(\d+)\.wav$", name).group(1))
        snr = float(re.search(r"_snr(\d+)_", name).group(1))
        rng = np.random.default_rng(ident)
        noise = rng.standard_normal(samples) * (0.5 + rng.random(samples).cumsum() / samples)
        write_pair(root / "clean" / f"clean_fileid_{ident}.wav", root / "noisy" / name,
                   speechlike(rng, samples, DNS_RATE), noise, snr, DNS_RATE)
    return root


def make_voicebank(root: Path) -> Path:
    samples = int(VB_SECONDS * VB_RATE)
    names = [f"p232_{i:03d}" for i in range(1, 394)] + [f"p257_{i:03d}" for i in range(1, 432)]
    log = []
    for index, name in enumerate(names[:VB_FILES]):
        rng = np.random.default_rng(index)
        noise, snr = VB_NOISES[index % 5], VB_SNRS[(index // 5) % 4]
        write_pair(root / "clean_testset_wav" / f"{name}.wav", root / "noisy_testset_wav" / f"{name}.wav",
                   speechlike(rng, samples, VB_RATE), rng.standard_normal(samples), float(snr), VB_RATE)
        log.append(f"{name} {noise} {snr}\n")
    (root / "logfiles").mkdir(parents=True, exist_ok=True)
    (root / "logfiles" / "log_testset.txt").write_text("".join(log))
    return root


def rate_line(label: str, clips: int, audio_seconds: float, wall: float, cpu: float) -> str:
    # CPU time beside wall time: on a shared machine the wall figures move with
    # the load, the CPU ones much less.
    return (f"{label:<46} {clips:4d} clips  wall {wall:6.1f} s {clips / wall:7.1f} clips/s "
            f"{audio_seconds / wall:7.1f} audio-s/s  |  cpu {cpu:6.1f} s {audio_seconds / cpu:7.1f} audio-s/s")


def timed(function) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def time_loading(label: str, dataset: str, options: dict) -> str:
    """clips() and every ClipSource.load(): the adapter alone."""
    from nsbench.builtin.datasets import dns2020, voicebank

    module = {"dns2020": dns2020, "voicebank": voicebank}[dataset]
    audio: list[float] = []
    wall, cpu = timed(lambda: audio.extend(source.load().duration for source in module.clips(options)))
    return rate_line(label, len(audio), sum(audio), wall, cpu)


def time_cli(label: str, argv: list[str], clips: int, audio_seconds: float) -> str:
    from nsbench.cli import main

    codes: list[int] = []
    wall, cpu = timed(lambda: codes.append(main(argv)))
    if codes != [0]:
        raise SystemExit(f"{label}: the CLI exited with {codes[0]}")
    return rate_line(label, clips, audio_seconds, wall, cpu)


def clear_remix_cache() -> None:
    shutil.rmtree(Path(os.environ["NSBENCH_CACHE"]) / "remix", ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metric", action="append", help=f"metrics for the CLI runs (default: {', '.join(DEFAULT_METRICS)})")
    parser.add_argument("--keep", action="store_true", help="keep the generated folders and print where")
    args = parser.parse_args()
    metrics = [flag for name in (args.metric or DEFAULT_METRICS) for flag in ("--metric", name)]
    work = Path(tempfile.mkdtemp(prefix="nsbench-bench-datasets-"))
    os.environ["NSBENCH_CACHE"] = str(work / "cache")  # a cold remix cache
    try:
        start = time.perf_counter()
        dns = make_dns(work / "DNS-Challenge" / "synthetic" / "no_reverb")
        print(f"generated the DNS fixture (150 x {DNS_SECONDS:g} s) in {time.perf_counter() - start:.1f} s")
        start = time.perf_counter()
        vb = make_voicebank(work / "VoiceBank-DEMAND")
        print(f"generated the VoiceBank fixture ({VB_FILES} x {VB_SECONDS:g} s at 48 kHz) in {time.perf_counter() - start:.1f} s")
        print(f"CLI runs: passthrough, metrics {', '.join(args.metric or DEFAULT_METRICS)}")
        common = ["--engine", "passthrough", *metrics, "--results-folder", str(work / "results"), "--quiet"]
        dns_flags = ["--dataset", "dns2020", "--data-folder", str(dns), *common]
        remix_flags = [*dns_flags, "--remix-snr-db", "0", "5"]
        remix_options = {"data_folder": str(dns), "remix_snr_db": [0.0, 5.0]}
        lines = [time_loading("dns2020: load, original files", "dns2020", {"data_folder": str(dns)})]
        clear_remix_cache()
        lines.append(time_loading("dns2020: load, remix 0 5 dB, cold cache", "dns2020", remix_options))
        lines.append(time_loading("dns2020: load, remix 0 5 dB, warm cache", "dns2020", remix_options))
        lines.append(time_cli("dns2020: CLI, original files", dns_flags, 150, 150 * DNS_SECONDS))
        clear_remix_cache()
        lines.append(time_cli("dns2020: CLI, --remix-snr-db 0 5, cold cache", remix_flags, 300, 300 * DNS_SECONDS))
        lines.append(time_cli("dns2020: CLI, --remix-snr-db 0 5, warm cache", remix_flags, 300, 300 * DNS_SECONDS))
        vb_options = {"data_folder": str(vb), "voicebank_rate": 16000}
        lines.append(time_loading("voicebank: load at 16 kHz (resampled)", "voicebank", vb_options))
        lines.append(time_loading("voicebank: load at 48 kHz", "voicebank", {**vb_options, "voicebank_rate": 48000}))
        lines.append(time_cli("voicebank: CLI, 16 kHz", ["--dataset", "voicebank", "--data-folder", str(vb), *common],
                              VB_FILES, VB_FILES * VB_SECONDS))
        print("\n".join(lines))
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
