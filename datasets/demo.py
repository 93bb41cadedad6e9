"""``demo``: the default test set, mixed on first use from real recordings that
ship with nsbench (``demo_audio/`` beside this file, 16-bit FLAC).

Targets are LibriSpeech readers (6 female, 6 male; four more are held out for
bench/check_demo_truth.py); the interference is one of four categories, each at
-5, 0, 5, 10, 15 and 20 dB SNR (DNS 2020's test set spans 0-19 dB, VoiceBank's
2.5-17.5; the top cells show an engine that damages nearly clean speech):
``stationary`` (a boat engine's hum, wind, and synthetic white and pink noise
as controls), ``nonstationary`` (traffic, cafe, construction, fire, running
water, rain), ``babble`` (4-6 other LibriSpeech readers, never the target) and
``music`` (tenor sax, trumpet, violin, solo singing). Plus music-only clips
(the user wants silence) and clean-voice clips (the engine must not damage
them). Deterministic for a seed, cached on disk, no download.
``demo_audio/MANIFEST.tsv`` gives each file's source, licence and segment;
``demo_audio/ATTRIBUTION.md`` the credits.

No official script: nsbench's own set and protocol. Each metric's ``mean``,
``median`` and ``mad`` are over clips, each clip once, per cell (noise x SNR)
and overall, the worst cell beside the mean, as the nomus write-up reports.
"""
from __future__ import annotations

import csv
import functools
import hashlib
import sys
from dataclasses import dataclass
from itertools import product
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from nsbench import ClipError, ClipSource, DatasetSpec, UserError, adapters, hookimpl
from nsbench.adapters import cache_root, read_audio
from nsbench.builtin.datasets import demo_tts, generated_set
from nsbench.builtin.datasets.generated_set import MadeClip

# Where the recordings are; tests point it at a damaged copy.
BUNDLE_FOLDER = Path(__file__).resolve().parent / "demo_audio"
MANIFEST, CHECKSUMS, ATTRIBUTION = "MANIFEST.tsv", "SHA256SUMS", "ATTRIBUTION.md"
# Bump when mixing changes, so cached sets from older code are not reused.
# 3: cells at 15 and 20 dB (every clip's talker and seed moved with the new order).
GENERATOR_VERSION = 3
SAMPLE_RATE = 16000
CLIP_SECONDS = 4.0
SNRS_DB = (-5, 0, 5, 10, 15, 20)
NOISE_CATEGORIES = ("stationary", "nonstationary", "babble", "music")
# Six: with fewer clips the paired Wilcoxon test of the report cannot reach p < 0.05.
CLIPS_PER_CELL = 6
MUSIC_ONLY_CLIPS = 6
CLEAN_VOICE_CLIPS = 6
DEFAULT_SEED = 2020
SEXES = ("female", "male")
# Recording label -> file in the bundle, or "synthetic:<generator in nsbench.adapters.NOISE_KINDS>".
RECORDINGS = {
    "stationary": {
        "engine_boat_hum": "noise/engine_boat_hum.flac",
        "wind_outdoor": "noise/wind_outdoor.flac",
        "white": "synthetic:white",
        "pink": "synthetic:pink",
    },
    "nonstationary": {
        "traffic_street_city": "noise/traffic_street_city.flac",
        "cafe_restaurant_ambience": "noise/cafe_restaurant_ambience.flac",
        "construction_machinery": "noise/construction_machinery.flac",
        "fireplace_crackle": "noise/fireplace_crackle.flac",
        "water_running_tap": "noise/water_running_tap.flac",
        "rain": "noise/rain.flac",
    },
    "music": {
        "tenor_sax": "music/medleysolos_tenor_sax_test-5.flac",
        "trumpet": "music/medleysolos_trumpet_test-6.flac",
        "violin": "music/medleysolos_violin_test-7.flac",
        "singing": "music/vocadito_10_solo_singing.flac",
    },
}
SYNTHETIC = "synthetic:"
# Two female and two male target talkers the demo never uses: the check set's.
HELD_OUT_TALKERS = ("LibriSpeech-1116", "LibriSpeech-6078", "LibriSpeech-2136", "LibriSpeech-8108")
# The last seconds of every noise recording belong to the check set, never to the demo.
CHECK_RESERVE_SECONDS = 5.0
# No share-alike, no non-commercial: the audio can ship inside any package.
PERMITTED_LICENCES = frozenset({"CC-BY-4.0", "CC-BY-3.0", "CC-BY (version not stated in repo)", "CC0-1.0", "Public-Domain"})
# Speech at -26 dBFS RMS over the clip (about ITU P.56 active level for speech
# with pauses), leaving headroom for the noise at -5 dB SNR.
SPEECH_RMS_DBFS = -26.0
MUSIC_ONLY_RMS_DBFS = -26.0
# Target voices are high-passed here (4th-order Butterworth, run forwards and
# backwards: no phase shift, so no lag). Reader 4014's recording (a target until
# issue 37, babble since) carries a fifth of its energy in a 16-23 Hz rumble;
# left in a reference, every engine that removes it would lose SI-SDR for it.
# No voice has content this low.
VOICE_HIGHPASS_HZ = 50.0
LEAD_IN_SECONDS = (0.2, 0.6)  # silence before the voice: voice-silent segments exist
# Every voiced clip holds at least this much speech, as Silero VAD counts it
# (its 32 ms chunks at a speech probability of 0.5 or more, metrics/speech_gated.py).
# A clip that is mostly its reader's pause scores an engine on silence: the
# first row of the listening grid and RNNoise's worst cell were such a clip,
# 0.1 s of voice in 4 s (issue 37). bench/make_demo_bundle.py refuses target
# recordings with a window that holds less.
MIN_SPEECH_SECONDS = 2.0
FADE_SECONDS = 0.01  # at every cut through a recording, so cuts do not click
CROSSFADE_SECONDS = 0.1  # music shorter than a clip is repeated with this crossfade
BABBLE_TALKERS = (4, 6)  # inclusive
BABBLE_GAIN_DB = 3.0  # babble talkers differ in level by up to this much either way
BABBLE_PAUSE_SECONDS = (0.1, 0.5)  # before a babble talker starts again
MUSIC_ONLY_LABELS = {"noise": "music", "snr_db": "no voice"}
CLEAN_VOICE_LABELS = {"noise": "none", "snr_db": "clean"}
# Named in every result's dataset description and in the report's footer.
ATTRIBUTION_TEXT = (
    "Demo audio: talkers and babble from LibriSpeech (Panayotov et al. 2015, from LibriVox recordings; CC BY 4.0); "
    "noises 'City' by gezortenplotz and 'Rain' by alex36917 (Freesound, CC BY), 'Construction' by Tomlija "
    "(Freesound, CC BY 3.0), 'Boat' by Falcet and 'Wind' by felix.blume (Freesound, CC0), 'Restaurant Ambiance' "
    "by stephan and 'Fireplace' by ezwa (SoundBible, public domain), via Blanket; running_tap by Pete Warden "
    "(Speech Commands, Warden 2018, CC BY 4.0); music from Medley-solos-DB (Lostanlen et al., CC BY 4.0) and "
    "vocadito (Bittner et al., CC BY 4.0). Cut, resampled, level-set and mixed by nsbench; full credits and "
    "changes in datasets/demo_audio/ATTRIBUTION.md."
)


@dataclass(frozen=True)
class Recording:
    """One bundled file, as its manifest line describes it."""

    file: str  # path inside the bundle
    category: str  # speech, babble, noise or music
    licence: str
    talker: str  # "LibriSpeech-5778"; "" where nobody speaks
    sex: str  # "female", "male" or ""


def verify_bundle(folder: Path) -> str:
    """Check every bundled file against SHA256SUMS; the checksums' own digest,
    which keys the generated set. A missing or damaged file (a broken install)
    is one line naming it."""
    sums = folder / CHECKSUMS
    if not sums.is_file():
        raise UserError(f"the demo's bundled file {sums} is missing: the installation is broken; reinstall nsbench")
    text = sums.read_text()
    for line in text.splitlines():
        expected, _, name = line.partition("  ")
        path = folder / name
        if not path.is_file():
            raise UserError(f"the demo's bundled file {path} is missing: the installation is broken; reinstall nsbench")
        if hashlib.sha256(path.read_bytes()).hexdigest() != expected:
            raise UserError(f"the demo's bundled file {path} is corrupt (its checksum does not match): reinstall nsbench")
    return hashlib.sha256(text.encode()).hexdigest()


def read_recordings(folder: Path) -> dict[str, Recording]:
    """The bundle's manifest: file -> Recording."""
    with open(folder / MANIFEST, newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    sex = {"F": "female", "M": "male", "": ""}
    return {
        row["file"]: Recording(row["file"], row["category"], row["license"], row["speaker_id"], sex[row["sex"]])
        for row in rows
    }


def demo_talkers(recordings: Mapping[str, Recording]) -> dict[str, list[str]]:
    """sex -> the target talkers' files the demo uses (the held-out ones left out)."""
    targets = [r for r in recordings.values() if r.category == "speech" and r.talker not in HELD_OUT_TALKERS]
    return {sex: sorted(r.file for r in targets if r.sex == sex) for sex in SEXES}


def shuffled(rng: np.random.Generator, items: Sequence[str]) -> list[str]:
    return [items[i] for i in rng.permutation(len(items))]


def plan(seed: int, recordings: Mapping[str, Recording]) -> list[dict[str, Any]]:
    """The clips to make, ordered so that the first 26 (one per cell: 4 noise
    categories x 6 SNRs, music-only, clean-voice) cover every cell once
    (``--limit`` then still spans the table). Talkers alternate by sex within a
    cell (three of each) and take turns overall; recordings rotate over the
    SNRs, so every cell spreads over talkers and recordings. The seed shuffles
    who and what comes first."""
    rng = np.random.default_rng([seed, 0])
    talkers = {sex: shuffled(rng, files) for sex, files in demo_talkers(recordings).items()}
    orders = {category: shuffled(rng, sorted(RECORDINGS[category])) for category in RECORDINGS}
    turns = {sex: 0 for sex in SEXES}

    def next_talker(sex: str) -> str:
        turns[sex] += 1
        return talkers[sex][(turns[sex] - 1) % len(talkers[sex])]

    clips = []
    for round_ in range(max(CLIPS_PER_CELL, MUSIC_ONLY_CLIPS, CLEAN_VOICE_CLIPS)):
        if round_ < CLIPS_PER_CELL:
            for cell, (noise, snr) in enumerate(product(NOISE_CATEGORIES, range(len(SNRS_DB)))):
                recording = "babble" if noise == "babble" else orders[noise][(snr + round_) % len(orders[noise])]
                labels = {"noise": noise, "snr_db": str(SNRS_DB[snr]), "recording": recording}
                target = next_talker(SEXES[(round_ + cell) % 2])
                clips.append({"clip_id": f"{noise}_snr{SNRS_DB[snr]}_{round_}", "labels": labels, "target": target})
        if round_ < MUSIC_ONLY_CLIPS:
            labels = {**MUSIC_ONLY_LABELS, "recording": orders["music"][round_ % len(orders["music"])]}
            clips.append({"clip_id": f"music-only_{round_}", "labels": labels, "target": None})
        if round_ < CLEAN_VOICE_CLIPS:
            labels = {**CLEAN_VOICE_LABELS, "recording": "none"}
            clips.append({"clip_id": f"clean-voice_{round_}", "labels": labels, "target": next_talker(SEXES[round_ % 2])})
    # Each clip gets its own generator: its audio does not depend on what the clips before it drew.
    for number, clip in enumerate(clips):
        clip["seed"] = [seed, number]
    return clips


@functools.lru_cache(maxsize=None)
def bundled_audio(path: str) -> np.ndarray:
    """A bundled file as float32 (read once per process while generating)."""
    try:
        audio, rate, _ = read_audio(path)
    except ClipError as error:
        raise UserError(f"the demo's bundled file {path} cannot be read ({error}): reinstall nsbench") from None
    if rate != SAMPLE_RATE:
        raise UserError(f"the demo's bundled file {path} is at {rate} Hz, not {SAMPLE_RATE}: reinstall nsbench")
    return audio


def set_rms(audio: np.ndarray, dbfs: float) -> np.ndarray:
    rms = float(np.sqrt(np.mean(audio.astype(np.float64) ** 2)))
    return (audio * (10 ** (dbfs / 20) / rms)).astype(np.float32)


def faded(audio: np.ndarray) -> np.ndarray:
    ramp = np.linspace(0.0, 1.0, int(FADE_SECONDS * SAMPLE_RATE), dtype=np.float32)
    out = audio.copy()
    out[: len(ramp)] *= ramp[: len(out)]
    out[len(out) - len(ramp) :] *= ramp[::-1][-len(out) :]
    return out


def window(rng: np.random.Generator, audio: np.ndarray, length: int, end: int | None = None) -> np.ndarray:
    """A random excerpt of ``length`` samples from ``audio[:end]``."""
    end = len(audio) if end is None else end
    start = int(rng.integers(0, end - length + 1))
    return faded(audio[start : start + length])


def repeated(audio: np.ndarray, length: int) -> np.ndarray:
    """``audio`` repeated with an equal-power crossfade until it holds ``length`` samples."""
    overlap = int(CROSSFADE_SECONDS * SAMPLE_RATE)
    out = audio.copy()
    while len(out) < length:
        out = crossfaded(out, audio, overlap)
    return out


def crossfaded(first: np.ndarray, second: np.ndarray, overlap: int) -> np.ndarray:
    """``first`` then ``second``, their ``overlap`` samples joined by an equal-power
    crossfade (which keeps the level of two unrelated sounds)."""
    angle = np.linspace(0.0, np.pi / 2, overlap, dtype=np.float32)
    joint = first[len(first) - overlap :] * np.cos(angle) + second[:overlap] * np.sin(angle)
    return np.concatenate([first[: len(first) - overlap], joint, second[overlap:]])


def without_rumble(audio: np.ndarray) -> np.ndarray:
    from scipy.signal import butter, sosfiltfilt

    highpass = butter(4, VOICE_HIGHPASS_HZ, "highpass", fs=SAMPLE_RATE, output="sos")
    return sosfiltfilt(highpass, audio).astype(np.float32)


def voice(rng: np.random.Generator, utterance: np.ndarray, length: int) -> np.ndarray:
    """A lead-in of silence, then as much of the utterance as fits, from a random point."""
    lead = int(rng.uniform(*LEAD_IN_SECONDS) * SAMPLE_RATE)
    out = np.zeros(length, dtype=np.float32)
    out[lead:] = window(rng, without_rumble(utterance), length - lead)
    return set_rms(out, SPEECH_RMS_DBFS)


def shortest_voice_samples() -> int:
    """The shortest stretch of a target recording a clip holds: the clip after the longest lead-in."""
    return int(CLIP_SECONDS * SAMPLE_RATE) - int(LEAD_IN_SECONDS[1] * SAMPLE_RATE)


def longest_voice_samples() -> int:
    """The longest stretch of a target recording a clip holds (after the shortest lead-in):
    a target recording must be at least this long."""
    return int(CLIP_SECONDS * SAMPLE_RATE) - int(LEAD_IN_SECONDS[0] * SAMPLE_RATE)


def noise_excerpt(rng: np.random.Generator, audio: np.ndarray, length: int) -> np.ndarray:
    """A window of a noise recording outside the end reserved for the check set."""
    return window(rng, audio, length, end=len(audio) - int(CHECK_RESERVE_SECONDS * SAMPLE_RATE))


def music_excerpt(rng: np.random.Generator, audio: np.ndarray, length: int) -> np.ndarray:
    if len(audio) < length + int(CROSSFADE_SECONDS * SAMPLE_RATE):
        audio = repeated(audio, 2 * length)
    return window(rng, audio, length)


def babble(rng: np.random.Generator, talker_files: Sequence[str], length: int) -> np.ndarray:
    """Several talkers, each looping its utterance from a random point, at levels within ±3 dB."""
    total = np.zeros(length)
    for path in talker_files:
        utterance = bundled_audio(path)
        pause = np.zeros(int(rng.uniform(*BABBLE_PAUSE_SECONDS) * SAMPLE_RATE), dtype=np.float32)
        cycle = np.concatenate([utterance, pause])
        offset = int(rng.integers(len(cycle)))
        looped = np.resize(cycle, offset + length)[offset:]  # np.resize repeats the cycle
        gain = 10 ** (rng.uniform(-BABBLE_GAIN_DB, BABBLE_GAIN_DB) / 20) / np.sqrt(np.mean(utterance.astype(np.float64) ** 2))
        total += looped * gain
    return total.astype(np.float32)


def babble_talkers(rng: np.random.Generator, recordings: Mapping[str, Recording], target: str | None) -> list[str]:
    """4-6 babble talkers' files; never the target talker."""
    exclude = recordings[target].talker if target else None
    files = sorted(r.file for r in recordings.values() if r.category == "babble" and r.talker != exclude)
    count = int(rng.integers(BABBLE_TALKERS[0], BABBLE_TALKERS[1] + 1))
    return [files[i] for i in sorted(rng.choice(len(files), size=count, replace=False))]


def interference(rng: np.random.Generator, labels: Mapping[str, str], recordings: Mapping[str, Recording],
                 target: str | None, length: int, folder: Path) -> tuple[np.ndarray, list[str]]:
    """The raw interference for a clip (any level) and the material it came from."""
    if labels["noise"] == "babble":
        files = babble_talkers(rng, recordings, target)
        return babble(rng, [str(folder / f) for f in files], length), files
    source = RECORDINGS[labels["noise"]][labels["recording"]]
    if source.startswith(SYNTHETIC):
        return adapters.NOISE_KINDS[source[len(SYNTHETIC):]](rng, length, SAMPLE_RATE), [source]
    audio = bundled_audio(str(folder / source))
    excerpt = music_excerpt if labels["noise"] == "music" else noise_excerpt
    return excerpt(rng, audio, length), [source]


def make_clip(entry: Mapping[str, Any], recordings: Mapping[str, Recording], folder: Path) -> MadeClip:
    """One planned clip; the voice and the interference at the cell's SNR by energy over the clip."""
    rng = np.random.default_rng(entry["seed"])
    length = int(CLIP_SECONDS * SAMPLE_RATE)
    labels, target = dict(entry["labels"]), entry["target"]
    labels["talker"] = recordings[target].talker if target else "none"
    labels["sex"] = recordings[target].sex if target else "none"
    sources = [target] if target else []
    clean = voice(rng, bundled_audio(str(folder / target)), length) if target else np.zeros(length, np.float32)
    if labels["snr_db"] == CLEAN_VOICE_LABELS["snr_db"]:
        noise = np.zeros(length, np.float32)
    else:
        raw, material = interference(rng, labels, recordings, target, length, folder)
        sources += material
        if target:
            noise = adapters.mix_at_snr(clean, raw, float(labels["snr_db"]))[1]
        else:
            noise = set_rms(raw, MUSIC_ONLY_RMS_DBFS)
    noisy, clean, noise = generated_set.within_peak_limit(clean, noise)
    return MadeClip(noisy, clean, noise, labels, sources)


def generate(folder: Path, seed: int, bundle: Path) -> None:
    recordings = read_recordings(bundle)
    made = functools.partial(make_clip, recordings=recordings, folder=bundle)
    generated_set.generate(folder, plan(seed, recordings), made, SAMPLE_RATE)


def demo_folder(seed: int, digest: str | None = None) -> Path:
    """The generated set for ``seed``, made on first use; the bundle is checked
    first, every time (``digest``: verify_bundle's, where the caller just checked it)."""
    bundle = BUNDLE_FOLDER
    digest = digest or verify_bundle(bundle)
    folder = cache_root() / f"demo-real-v{GENERATOR_VERSION}-seed{seed}-bundle{digest[:16]}"
    if not (folder / "manifest.json").is_file():
        print(f"nsbench: mixing the demo set in {folder} (once)", file=sys.stderr)
        generate(folder, seed, bundle)
    return folder


def clips(options: Mapping[str, Any]) -> list[ClipSource]:
    return generated_set.clip_sources(demo_folder(options.get("demo_seed", DEFAULT_SEED)))


def describe(options: Mapping[str, Any]) -> dict[str, Any]:
    seed = options.get("demo_seed", DEFAULT_SEED)
    digest = verify_bundle(BUNDLE_FOLDER)
    folder = demo_folder(seed, digest)
    return {
        "seed": seed,
        "generator_version": GENERATOR_VERSION,
        "folder": str(folder),
        "content_sha256": generated_set.content_hash(folder),
        "bundle": str(BUNDLE_FOLDER),
        "bundle_sha256sums": digest,
        "attribution": ATTRIBUTION_TEXT,
    }


@hookimpl
def add_arguments(parser):
    parser.add_argument("--demo-seed", type=int, default=DEFAULT_SEED, help="seed of the generated demo sets (demo, demo-tts)")


@hookimpl
def register_datasets(register):
    register(
        DatasetSpec(
            name="demo",
            clips=clips,
            default=True,
            description="default demo: real LibriSpeech talkers in stationary, nonstationary, babble and music "
                        "interference at -5..20 dB, music-only and clean clips; bundled recordings, mixed locally",
            cell_keys=("noise", "snr_db"),
            describe=describe,
        )
    )
    register(demo_tts.spec())  # the other generated set, which reads --demo-seed too
