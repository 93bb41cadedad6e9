"""The musdb, biodenoising and fuss adapters on fixtures in their published layouts,
the Music Demixing SDR on analytic cases, and FUSS SI-SNR against an independent
implementation of the published formula written here.

Layouts: MUSDB18-HQ ``{train,test}/<Artist - Title>/{mixture,drums,bass,other,vocals}.wav``
(44.1 kHz stereo 16-bit); Biodenoising ``biodenoising_validation/{16000,48000}/{clean,noisy,noise}/``
with ``{clean,noisy,noise}.json`` (``[[path, samples], ...]``, the authors' absolute
paths) and ``{rate}_snr_experiments/{-5,0,5,10}/``; FUSS ``ssdata_reverb/<split>_example_list.txt``
(tab-separated, mixture first) with ``<split>/exampleNNNN.wav`` and
``exampleNNNN_sources/{background0,foreground0..2}_sound.wav``.
"""
from __future__ import annotations

import itertools
import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest
import soundfile

from nsbench.audio.files import read_audio
from nsbench.builtin.datasets import biodenoising, fuss, musdb
from nsbench.builtin.metrics import demixing, fuss_sisnr
from nsbench.cli import main
from nsbench.plugins.hookspecs import hookimpl
from nsbench.plugins.types import MetricInputs, MetricUndefined, UserError

from tests.helpers.plugins import add_plugin_to_the_cli

MUSDB_RATE = 44100
TRACKS = ("Al James - Schoolboy Facination", "The Easton Ellises (Baumi) - SDRNR")
FUSS_RATE = 16000


def tone(freq: float, seconds: float, rate: int, amplitude: float = 1.0) -> np.ndarray:
    t = np.arange(int(round(seconds * rate))) / rate
    return amplitude * np.sin(2 * np.pi * freq * t)


def write(path: Path, audio: np.ndarray, rate: int, subtype: str = "PCM_16") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(str(path), audio, rate, subtype=subtype)
    return path


def results(folder: Path, engine: str) -> tuple[dict, list[dict]]:
    summary = json.loads((folder / f"{engine}.json").read_text())
    rows = [json.loads(line) for line in (folder / f"{engine}.clips.jsonl").read_text().splitlines()]
    return summary, rows


def cell(summary: dict, **labels: str) -> dict:
    return next(c for c in summary["cells"] if c["cell"] == labels)


# =========================================================================== core: excerpt reading


def test_clip_loaders_pickle_for_worker_processes(musdb_root, bio_parent, fuss_root, cache):
    for sources in (musdb.clips(musdb_options(musdb_root)), biodenoising.clips(bio_options(bio_parent)),
                    fuss.clips(fuss_options(fuss_root))):
        clip = pickle.loads(pickle.dumps(sources[0].load))()
        assert clip.clip_id == sources[0].clip_id


def test_read_audio_reads_only_the_requested_frames(tmp_path):
    audio = np.random.default_rng(0).uniform(-0.5, 0.5, size=(1000, 2)).astype(np.float32)
    path = write(tmp_path / "a.wav", audio, 8000, subtype="FLOAT")
    whole, rate, notes = read_audio(path)
    part, part_rate, part_notes = read_audio(path, start=300, frames=250)
    assert rate == part_rate == 8000 and len(whole) == 1000 and len(part) == 250
    np.testing.assert_array_equal(part, whole[300:550])
    np.testing.assert_array_equal(part, audio[300:550].mean(axis=1, dtype=np.float32))
    assert notes == part_notes == ["a.wav: 2 channels downmixed to mono"]
    np.testing.assert_array_equal(read_audio(path, start=900)[0], whole[900:])


# =========================================================================== MUSDB18-HQ


def stereo(mono: np.ndarray) -> np.ndarray:
    """Left and right differ, so the downmix (their mean) is checked."""
    return np.stack([mono, 0.6 * mono], axis=1)


def make_musdb(root: Path, split: str = "test", seconds: float = 2.5) -> Path:
    """Two tracks. In the first the singer stops after 1 s, leaving bleed 45 dB
    below the voice (above -60 dBFS, so only the relative rule makes it silent)."""
    rate, n = MUSDB_RATE, int(seconds * MUSDB_RATE)
    rng = np.random.default_rng(7)
    for index, name in enumerate(TRACKS):
        folder = root / split / name
        voice = tone(220 + 30 * index, seconds, rate, 0.4) * (0.6 + 0.4 * tone(3, seconds, rate))
        if index == 0:
            voice[rate:] *= 10 ** (-45 / 20)
        stems = {
            "drums": 0.05 * rng.standard_normal(n) * (tone(2, seconds, rate) > 0.9),
            "bass": tone(55, seconds, rate, 0.1),
            "other": tone(660, seconds, rate, 0.05),
            "vocals": voice,
        }
        for stem, audio in stems.items():
            write(folder / f"{stem}.wav", stereo(audio), rate)
        write(folder / "mixture.wav", stereo(sum(stems.values())), rate)
    return root


@pytest.fixture(scope="module")
def musdb_root(tmp_path_factory) -> Path:
    return make_musdb(tmp_path_factory.mktemp("musdb18hq"))


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("NSBENCH_CACHE", str(folder))
    return folder


def musdb_options(root: Path, **extra) -> dict:
    return {"data_folder": str(root), "musdb_split": "test", "musdb_excerpt_seconds": 1.0, "musdb_rate": MUSDB_RATE, **extra}


def downmixed(path: Path) -> np.ndarray:
    data, _ = soundfile.read(str(path), dtype="float32", always_2d=True)
    return data.mean(axis=1, dtype=np.float32)


def test_musdb_excerpts_cells_and_music_only(musdb_root, cache):
    sources = musdb.clips(musdb_options(musdb_root))
    # 2.5 s tracks in 1 s excerpts: two each, the 0.5 s tail dropped.
    assert [s.clip_id for s in sources] == [f"{t}/{s}s" for t in TRACKS for s in (0, 1)]
    assert [s.labels["content"] for s in sources] == ["voice+music", "music-only", "voice+music", "voice+music"]
    assert sources[1].labels == {"content": "music-only", "track": TRACKS[0], "start_s": "1", "voice": "none"}
    spec_cells = {(s.labels["content"],) for s in sources}
    assert spec_cells == {("voice+music",), ("music-only",)}


def test_musdb_clip_is_vocals_against_the_other_stems(musdb_root, cache):
    source = musdb.clips(musdb_options(musdb_root))[2]  # second track, first second
    clip = source.load()
    folder = musdb_root / "test" / TRACKS[1]
    excerpt = slice(0, MUSDB_RATE)
    np.testing.assert_array_equal(clip.clean, downmixed(folder / "vocals.wav")[excerpt])
    music = sum(downmixed(folder / f"{s}.wav")[excerpt].astype(np.float64) for s in ("drums", "bass", "other"))
    np.testing.assert_allclose(clip.noise, music, atol=1e-7)
    np.testing.assert_allclose(clip.noisy, clip.clean.astype(np.float64) + clip.noise, atol=1e-7)
    assert clip.sample_rate == MUSDB_RATE and clip.duration == 1.0
    assert clip.notes == ("stereo stems downmixed to mono (channel average)",)  # mixture.wav matched the sum


def test_musdb_music_only_clip_has_silent_clean_and_keeps_the_bleed_in_the_input(musdb_root, cache):
    clip = musdb.clips(musdb_options(musdb_root))[1].load()
    assert not clip.has_voice
    np.testing.assert_array_equal(clip.noise, clip.noisy)
    bleed = downmixed(musdb_root / "test" / TRACKS[0] / "vocals.wav")[MUSDB_RATE : 2 * MUSDB_RATE]
    assert np.any(bleed) and "music-only, clean is silence" in clip.notes[-1]


def test_musdb_reads_only_the_excerpt_frames(musdb_root, cache, monkeypatch):
    calls = []

    def recording(path, *, start=0, frames=-1):
        calls.append((Path(path).name, start, frames))
        return read_audio(path, start=start, frames=frames)

    sources = musdb.clips(musdb_options(musdb_root))
    monkeypatch.setattr(musdb, "read_audio", recording)
    sources[3].load()
    assert sorted(calls) == sorted((f"{s}.wav", MUSDB_RATE, MUSDB_RATE) for s in musdb.HQ_FILES)


def test_musdb_vocal_activity_is_measured_once_then_cached(musdb_root, cache, monkeypatch):
    first = [s.labels for s in musdb.clips(musdb_options(musdb_root))]

    def refuse(track):
        raise AssertionError("measured again")

    monkeypatch.setattr(musdb, "measure", refuse)
    assert [s.labels for s in musdb.clips(musdb_options(musdb_root))] == first


def test_musdb_rate_and_whole_tracks(musdb_root, cache):
    clip = musdb.clips(musdb_options(musdb_root, musdb_rate=16000))[0].load()
    assert clip.sample_rate == 16000 and len(clip.noisy) == 16000
    assert "resampled from 44100 Hz to 16000 Hz" in clip.notes
    whole = musdb.clips(musdb_options(musdb_root, musdb_excerpt_seconds=0))
    assert [s.clip_id for s in whole] == list(TRACKS)
    assert whole[0].load().duration == 2.5 and whole[0].labels["content"] == "voice+music"


def test_musdb_mixture_that_is_not_the_sum_is_noted(tmp_path, cache):
    root = make_musdb(tmp_path / "m", seconds=1.0)
    mixture = root / "test" / TRACKS[1] / "mixture.wav"
    data, rate = soundfile.read(str(mixture))
    write(mixture, data * 0.9, rate)  # as if limited after mixing
    clip = musdb.clips(musdb_options(root))[1].load()
    assert any(n.startswith("mixture.wav differs from the sum of the stems by up to") for n in clip.notes)


def test_musdb_layout_errors_say_what_was_expected_and_found(musdb_root, tmp_path, cache):
    with pytest.raises(UserError, match=r"musdb expects .*/train/<Artist - Title>/\{mixture,drums,bass,other,vocals\}\.wav .*"
                       r"there is no train/ in .*, found: test"):
        musdb.clips(musdb_options(musdb_root, musdb_split="train"))
    broken = make_musdb(tmp_path / "b", seconds=1.0)
    (broken / "test" / TRACKS[0] / "vocals.wav").unlink()
    with pytest.raises(UserError, match=r"1 track folders in .* are incomplete: Al James - Schoolboy Facination \(missing vocals\.wav\)"):
        musdb.clips(musdb_options(broken))
    empty = tmp_path / "e" / "test"
    empty.mkdir(parents=True)
    (empty / "README.txt").write_text("x")
    with pytest.raises(UserError, match=r"found no track in .*, only: README\.txt"):
        musdb.clips(musdb_options(empty.parent))


def test_musdb_stem_mp4_without_pyav_names_the_install(tmp_path, cache, monkeypatch):
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / f"{TRACKS[0]}.stem.mp4").write_bytes(b"")
    monkeypatch.setattr(musdb, "module_installed", lambda name: False)
    with pytest.raises(UserError, match=r"MUSDB18 \.stem\.mp4 files; decoding them needs PyAV: pip install av"):
        musdb.clips(musdb_options(tmp_path))


def write_stem_mp4(path: Path, stems: list[np.ndarray], rate: int) -> None:
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as container:
        streams = [container.add_stream("aac", rate=rate, layout="stereo") for _ in stems]
        for stream, audio in zip(streams, stems):
            frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(stereo(audio).T, dtype=np.float32), format="fltp", layout="stereo")
            frame.sample_rate = rate
            for packet in stream.encode(frame):
                container.mux(packet)
        for stream in streams:
            for packet in stream.encode(None):
                container.mux(packet)


def test_musdb_lossy_stem_mp4_decodes_excerpts_with_pyav(tmp_path, cache):
    pytest.importorskip("av")
    seconds, rate = 2.5, MUSDB_RATE
    stems = [tone(f, seconds, rate, a) for f, a in ((440, 0.2), (100, 0.1), (55, 0.1), (660, 0.05), (220, 0.3))]
    stems[0] = sum(stems[1:])  # stream 0 is the mixture
    path = tmp_path / "test" / f"{TRACKS[0]}.stem.mp4"
    write_stem_mp4(path, stems, rate)
    whole, whole_rate = musdb.decode_mp4(path, 4)
    part, _ = musdb.decode_mp4(path, 4, start=rate, frames=rate)
    assert whole_rate == rate and len(part) == rate
    # After the seek, the pre-roll makes the excerpt decode as the whole stream does (to ~-110 dB).
    np.testing.assert_allclose(part, whole[rate : 2 * rate], atol=1e-5)
    sources = musdb.clips(musdb_options(tmp_path))
    assert [s.labels["content"] for s in sources] == ["voice+music", "voice+music"]
    clip = sources[1].load()
    np.testing.assert_allclose(clip.clean, whole[rate : 2 * rate], atol=1e-5)
    rms = float(np.sqrt(np.mean(clip.clean.astype(np.float64) ** 2)))
    assert 20 * math.log10(rms / (0.8 * 0.3 / math.sqrt(2))) == pytest.approx(0, abs=0.5)  # AAC keeps the level


def test_musdb_end_to_end_with_the_demixing_metrics(musdb_root, tmp_path, cache):
    argv = ["--dataset", "musdb", "--data-folder", str(musdb_root), "--engine", "passthrough",
            "--musdb-excerpt-seconds", "1", "--musdb-rate", "16000",
            "--metric", "mdx_sdr_voice", "--metric", "mdx_sdr_music", "--metric", "mdx_sdr",
            "--metric", "music_attenuation_db", "--results-folder", str(tmp_path / "r"), "--quiet"]
    assert main(argv) == 0
    summary, rows = results(tmp_path / "r" / "musdb", "passthrough")
    assert summary["clips"] == 4 and summary["failures"] == 0
    assert cell(summary, content="music-only")["clips"] == 1 and cell(summary, content="voice+music")["clips"] == 3
    for row in rows:
        assert row["scores"]["mdx_sdr_music"] == pytest.approx(0, abs=1e-9)  # nothing removed
        if row["labels"]["content"] == "music-only":
            assert row["undefined"]["mdx_sdr_voice"] == "no voice in this clip"
            assert row["scores"]["music_attenuation_db"] == pytest.approx(0, abs=1e-6)
        else:
            assert row["scores"]["mdx_sdr"] == pytest.approx(row["scores"]["mdx_sdr_voice"] / 2)


# =========================================================================== Music Demixing SDR


def inputs(output, clean, noisy, rate=16000) -> MetricInputs:
    as32 = lambda x: np.asarray(x, dtype=np.float32)
    return MetricInputs(output=as32(output), clean=as32(clean), noisy=as32(noisy), sample_rate=rate)


@pytest.fixture(scope="module")
def voice_and_music():
    rng = np.random.default_rng(3)
    voice = tone(200, 1.0, 16000, 0.3) * (0.5 + 0.5 * tone(4, 1.0, 16000))
    music = 0.1 * rng.standard_normal(16000)
    return voice.astype(np.float32), music.astype(np.float32)


def energy(x) -> float:
    x = np.asarray(x, dtype=np.float64)
    return float(np.dot(x, x))


def test_mdx_sdr_half_level_voice_is_6_02_db(voice_and_music):
    voice, music = voice_and_music
    half = inputs(0.5 * voice, voice, voice + music)
    assert demixing.mdx_sdr_voice_metric(half) == pytest.approx(10 * math.log10(1 / 0.25), abs=1e-6)  # 6.0206
    # The accompaniment estimate noisy - output = music + voice/2: error voice/2.
    expected_music = 10 * math.log10(energy(music) / (0.25 * energy(voice)))
    assert demixing.mdx_sdr_music_metric(half) == pytest.approx(expected_music, abs=1e-5)
    assert demixing.mdx_sdr_mean_metric(half) == pytest.approx((6.0206 + expected_music) / 2, abs=1e-4)


def test_mdx_sdr_passthrough_silence_perfect_and_polarity(voice_and_music):
    voice, music = voice_and_music
    noisy = voice + music
    snr = 10 * math.log10(energy(voice) / energy(music))
    passthrough = inputs(noisy, voice, noisy)
    assert demixing.mdx_sdr_voice_metric(passthrough) == pytest.approx(snr, abs=1e-5)
    assert demixing.mdx_sdr_music_metric(passthrough) == pytest.approx(0, abs=1e-9)
    silence = inputs(np.zeros_like(voice), voice, noisy)
    assert demixing.mdx_sdr_voice_metric(silence) == pytest.approx(0, abs=1e-9)
    assert demixing.mdx_sdr_music_metric(silence) == pytest.approx(-snr, abs=1e-5)
    perfect = inputs(voice, voice, noisy)
    assert demixing.mdx_sdr_voice_metric(perfect) == pytest.approx(10 * math.log10((energy(voice) + 1e-7) / 1e-7))
    assert demixing.mdx_sdr_voice_metric(inputs(-voice, voice, noisy)) == pytest.approx(10 * math.log10(1 / 4), abs=1e-6)


def test_mdx_sdr_matches_the_published_formula_on_noise():
    rng = np.random.default_rng(11)
    reference, estimate = rng.standard_normal((2, 5000))
    estimate = 0.7 * reference + 0.2 * estimate
    expected = 10 * math.log10(np.sum(reference**2) / np.sum((reference - estimate) ** 2))
    assert demixing.mdx_sdr(estimate, reference) == pytest.approx(expected, abs=1e-9)


def test_mdx_sdr_silent_stems_are_undefined_not_infinite(voice_and_music):
    voice, music = voice_and_music
    with pytest.raises(MetricUndefined, match="the clean voice is silent"):
        demixing.mdx_sdr_voice_metric(inputs(music, np.zeros_like(voice), music))
    with pytest.raises(MetricUndefined, match="noisy equals clean"):
        demixing.mdx_sdr_music_metric(inputs(voice, voice, voice))
    with pytest.raises(MetricUndefined, match="silent"):
        demixing.mdx_sdr(voice, np.zeros_like(voice))


# =========================================================================== Biodenoising


FAKE_AUTHOR_ROOT = "/home/marius/data/biodenoising_validation"


def write_bio_set(folder: Path, items: dict[str, tuple[float, float]], rate: int, seconds: float = 1.0) -> None:
    """name -> (clean amplitude, noise amplitude): a 440 Hz call and a 1 kHz hum,
    whole cycles over the clip so they are exactly orthogonal."""
    for role in biodenoising.ROLES:
        (folder / role).mkdir(parents=True, exist_ok=True)
    lists = {role: [] for role in biodenoising.ROLES}
    for name, (clean_amp, noise_amp) in items.items():
        clean, noise = tone(440, seconds, rate, clean_amp), tone(1000, seconds, rate, noise_amp)
        for role, audio in (("clean", clean), ("noisy", clean + noise), ("noise", noise)):
            write(folder / role / name, audio, rate, subtype="FLOAT")
            # The published lists hold the authors' absolute paths.
            lists[role].append([f"{FAKE_AUTHOR_ROOT}/{folder.name}/{role}/{name}", len(audio)])
    for role, entries in lists.items():
        (folder / f"{role}.json").write_text(json.dumps(entries))


SNR_ITEMS = {  # input SNRs 0, 5 and 20 dB (equal-length tones: power ratio = amplitude ratio squared)
    "robin_0001.wav": (0.1, 0.1),
    "cleaner_warbler_02.wav": (0.1, 0.1 * 10 ** (-5 / 20)),
    "humpback_03.wav": (0.1, 0.1 * 10 ** (-20 / 20)),
}


@pytest.fixture(scope="module")
def bio_parent(tmp_path_factory) -> Path:
    # "clean" in the data folder's own path: earthspecies' evaluate.py would turn
    # it into "noisy" and miss every file.
    parent = tmp_path_factory.mktemp("bio") / "clean datasets"
    root = parent / biodenoising.ROOT_NAME
    write_bio_set(root / "16000", SNR_ITEMS, 16000)
    for snr in biodenoising.SNR_EXPERIMENTS:
        amplitude = 0.1 * 10 ** (-float(snr) / 20)
        write_bio_set(root / "16000_snr_experiments" / snr, {"gibbon_01.wav": (0.1, amplitude)}, 16000, 0.5)
    return parent


def bio_options(folder: Path, **extra) -> dict:
    return {"data_folder": str(folder), "biodenoising_rate": 16000, "biodenoising_snr_experiments": False, **extra}


def test_biodenoising_pairs_by_relative_path_under_a_root_containing_clean(bio_parent):
    for folder in (bio_parent, bio_parent / biodenoising.ROOT_NAME):  # the parent or the set itself
        sources = biodenoising.clips(bio_options(folder))
        assert sorted(s.clip_id for s in sources) == sorted(Path(n).stem for n in SNR_ITEMS)
        assert all(s.labels == {"set": "16000", "snr_db": "as recorded"} for s in sources)
    clip = next(s for s in sources if s.clip_id == "cleaner_warbler_02").load()
    base = bio_parent / biodenoising.ROOT_NAME / "16000"
    # The pairing earthspecies' evaluate.py does would look for a file that does not exist:
    assert not Path(str(base / "clean" / "cleaner_warbler_02.wav").replace("clean", "noisy")).exists()
    np.testing.assert_array_equal(clip.clean, read_audio(base / "clean" / "cleaner_warbler_02.wav")[0])
    np.testing.assert_array_equal(clip.noisy, read_audio(base / "noisy" / "cleaner_warbler_02.wav")[0])
    np.testing.assert_array_equal(clip.noise, read_audio(base / "noise" / "cleaner_warbler_02.wav")[0])
    assert clip.source_path == str(base / "noisy" / "cleaner_warbler_02.wav") and "clean datasets" in clip.source_path


def test_biodenoising_snr_experiments_label_their_snr(bio_parent):
    sources = biodenoising.clips(bio_options(bio_parent, biodenoising_snr_experiments=True))
    assert [(s.clip_id, s.labels["snr_db"]) for s in sources] == [
        (f"snr{snr}/gibbon_01", snr) for snr in ("-5", "0", "5", "10")
    ]
    assert sources[0].labels["set"] == "16000_snr_experiments/-5"


def test_biodenoising_unpaired_files_are_listed(tmp_path):
    folder = tmp_path / biodenoising.ROOT_NAME / "16000"
    write_bio_set(folder, {"a.wav": (0.1, 0.1), "b.wav": (0.1, 0.1)}, 16000, 0.1)
    (folder / "noisy" / "b.wav").unlink()
    (folder / "noisy" / "stray.wav").write_bytes((folder / "noisy" / "a.wav").read_bytes())
    with pytest.raises(UserError, match=r"2 files under .* have no partner at the same path: clean/b\.wav, noisy/stray\.wav"):
        biodenoising.clips(bio_options(tmp_path))


def test_biodenoising_json_list_must_match_the_folder(tmp_path):
    folder = tmp_path / biodenoising.ROOT_NAME / "16000"
    write_bio_set(folder, {"a.wav": (0.1, 0.1), "b.wav": (0.1, 0.1)}, 16000, 0.1)
    for role in ("clean", "noisy", "noise"):
        (folder / role / "b.wav").unlink()
    with pytest.raises(UserError, match=r"clean\.json and .*/clean/ disagree on 1 file: b\.wav \(listed, not in clean/\)"):
        biodenoising.clips(bio_options(tmp_path))


def test_biodenoising_layout_mismatch_says_what_was_expected_and_found(tmp_path):
    (tmp_path / "wrong").mkdir()
    (tmp_path / "wrong" / "audio").mkdir()
    with pytest.raises(UserError, match=r"biodenoising expects biodenoising_validation/16000/\{clean,noisy,noise\}/ .* holds: audio"):
        biodenoising.clips(bio_options(tmp_path / "wrong"))
    (tmp_path / "only" / "16000" / "noisy").mkdir(parents=True)
    with pytest.raises(UserError, match=r"expects .*/16000/\{clean,noisy,noise\}/; no clean/ there, found: noisy"):
        biodenoising.clips(bio_options(tmp_path / "only"))


def test_biodenoising_48k_folder(tmp_path):
    write_bio_set(tmp_path / biodenoising.ROOT_NAME / "48000", {"owl.wav": (0.1, 0.05)}, 48000, 0.1)
    clip = biodenoising.clips(bio_options(tmp_path, biodenoising_rate=48000))[0].load()
    assert clip.sample_rate == 48000 and len(clip.noisy) == 4800 and clip.notes == ()


class OracleSeededPlugin:
    """A generative-model stand-in whose residual noise depends on its seed:
    output = clean + 2**-seed * (noisy - clean). With clean orthogonal to the
    noise, SI-SDR = input SNR + 20 log10(2) * seed exactly."""

    @hookimpl
    def register_engines(self, register):
        from nsbench.plugins.types import EngineSpec

        class Halving:
            sample_rate, delay = 16000, 0

            def __init__(self, seed):
                self.gain = 2.0 ** -seed

            def process(self, audio, clean):
                return (clean + self.gain * (audio - clean)).astype(np.float32)

            def close(self):
                pass

        register(EngineSpec(name="halving", factory=lambda options: Halving(options["seed"]), description="test",
                            sample_rate=16000, delay=0, oracle=True, seeded=True))


def test_biodenoising_seed_aggregation_end_to_end(bio_parent, tmp_path, monkeypatch):
    add_plugin_to_the_cli(monkeypatch, OracleSeededPlugin())
    argv = ["--dataset", "biodenoising", "--data-folder", str(bio_parent), "--engine", "halving", "--seeds", "0-2",
            "--metric", "si_sdr", "--metric", "si_sdri", "--results-folder", str(tmp_path / "r"), "--quiet"]
    assert main(argv) == 0
    summary, rows = results(tmp_path / "r" / "biodenoising", "halving")
    step = 20 * math.log10(2)  # 6.0206 dB per halving
    snr = {"robin_0001": 0.0, "cleaner_warbler_02": 5.0, "humpback_03": 20.0}
    assert len(rows) == 9
    for row in rows:
        assert row["scores"]["si_sdr"] == pytest.approx(snr[row["clip_id"]] + step * row["seed"], abs=1e-4)
    # Seed card: per clip the mean over seeds (snr + 6.02), then median and MAD over clips.
    stats = summary["metrics"]["si_sdr"]
    assert stats["n"] == 3 and summary["clips"] == 3 and summary["runs"] == 9
    assert stats["median"] == pytest.approx(5 + step, abs=1e-4)  # per-clip means 6.02, 11.02, 26.02
    assert stats["mad"] == pytest.approx(5.0, abs=1e-4)  # |6.02 - 11.02|, 0, |26.02 - 11.02| -> 5
    assert stats["mean"] == pytest.approx(25 / 3 + step, abs=1e-4)
    # results.py: every clip x seed row pooled: 0, 5, 6.02, 11.02, 12.04, 17.04, 20, 26.02, 32.04.
    pooled = stats["pooled"]
    assert pooled["n"] == 9
    assert pooled["median"] == pytest.approx(2 * step, abs=1e-4)
    # Deviations from 12.04: 0, 1.02, 5, 6.02, 7.04, 7.96, 12.04, 13.98, 20; their median is |5 - 12.04|.
    assert pooled["mad"] == pytest.approx(2 * step - 5, abs=1e-4)
    low, high = pooled["median_ci95"]
    assert 0 <= low <= pooled["median"] <= high <= 4 * step + 8
    assert stats == cell(summary, snr_db="as recorded")["metrics"]["si_sdr"]
    assert summary["metrics"]["si_sdri"]["median"] == pytest.approx(step, abs=1e-4)
    baseline, _ = results(tmp_path / "r" / "biodenoising", "passthrough")
    assert baseline["runs"] == 3 and baseline["metrics"]["si_sdr"]["median"] == pytest.approx(5.0, abs=1e-4)


# =========================================================================== FUSS: dataset


FUSS_EXAMPLES = {  # example -> listed sources (amplitude 0 = an all-zero file)
    "example0000": (0.3,),
    "example0001": (0.3, 0.2),
    "example0002": (0.3, 0.2, 0.1),
    "example0003": (0.3, 0.2, 0.1, 0.05),
    "example0004": (0.3, 0.0, 0.1),  # listed 3, active 2
    "example0005": (0.0,),  # all silent: skipped, as evaluate_lib.py does
}


def source_names(count: int) -> list[str]:
    return ["background0_sound.wav"] + [f"foreground{i}_sound.wav" for i in range(count - 1)]


def make_fuss(root: Path, split: str = "eval", seconds: float = 0.5) -> Path:
    rng = np.random.default_rng(5)
    lines = []
    for example, amplitudes in FUSS_EXAMPLES.items():
        fields = [f"{split}/{example}.wav"]
        total = 0
        for name, amplitude in zip(source_names(len(amplitudes)), amplitudes):
            audio = amplitude * rng.uniform(-1, 1, int(seconds * FUSS_RATE)) * (0.5 + 0.5 * tone(3, seconds, FUSS_RATE))
            write(root / split / f"{example}_sources" / name, audio, FUSS_RATE)
            fields.append(f"{split}/{example}_sources/{name}")
            total = total + audio
        write(root / split / f"{example}.wav", total, FUSS_RATE)
        lines.append("\t".join(fields))
    (root / f"{split}_example_list.txt").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def fuss_root(tmp_path_factory) -> Path:
    return make_fuss(tmp_path_factory.mktemp("fuss") / "ssdata_reverb")


def fuss_options(root: Path, **extra) -> dict:
    return {"data_folder": str(root), "fuss_split": "eval", **extra}


def test_fuss_clips_recompute_the_mixture_and_pad_to_four_sources(fuss_root, cache, capsys):
    sources = fuss.clips(fuss_options(fuss_root))
    assert [(s.clip_id, s.labels["sources"]) for s in sources] == [
        ("example0000", "1"), ("example0001", "2"), ("example0002", "3"), ("example0003", "4"), ("example0004", "2"),
    ]
    assert "skipped 1 example whose sources are all silent, as the FUSS evaluation does: example0005" in capsys.readouterr().err
    clip = sources[2].load()
    folder = fuss_root / "eval" / "example0002_sources"
    expected = [read_audio(folder / name)[0] for name in source_names(3)]
    # Zero-padded to the 160000 samples evaluate_lib.py reads, and noted.
    assert clip.sources.shape == (4, 160000) and clip.is_separation
    for row, audio in zip(clip.sources, expected):
        np.testing.assert_array_equal(row[:8000], audio)
        assert not np.any(row[8000:])
    assert "background0_sound.wav has 8000 samples: zero-padded to 160000, as evaluate_lib.py reads it" in clip.notes
    assert not np.any(clip.sources[3]) and not np.any(clip.clean)
    np.testing.assert_array_equal(clip.noisy, clip.sources.sum(axis=0))
    assert clip.source_path == str(fuss_root / "eval" / "example0002.wav")


def test_fuss_activity_is_cached(fuss_root, cache, monkeypatch):
    first = [s.labels for s in fuss.clips(fuss_options(fuss_root))]
    monkeypatch.setattr(fuss, "file_rms", lambda path: pytest.fail("read again"))
    assert [s.labels for s in fuss.clips(fuss_options(fuss_root))] == first


@pytest.mark.parametrize("entry", ["../../etc/passwd", "eval/../../secret.wav", "/etc/passwd", "~/x.wav"])
def test_fuss_list_paths_cannot_leave_the_data_folder(tmp_path, cache, entry):
    root = make_fuss(tmp_path / "ssdata_reverb")
    listing = root / "eval_example_list.txt"
    listing.write_text(listing.read_text() + f"eval/example9999.wav\t{entry}\n")
    with pytest.raises(UserError, match=rf"eval_example_list\.txt:7: path '{entry}' leaves the data folder"):
        fuss.clips(fuss_options(root))


def test_fuss_layout_errors(tmp_path, cache):
    (tmp_path / "fuss" / "eval").mkdir(parents=True)
    with pytest.raises(UserError, match=r"fuss expects eval_example_list\.txt in .*; found: eval"):
        fuss.clips(fuss_options(tmp_path / "fuss"))
    root = make_fuss(tmp_path / "ssdata_reverb")
    (root / "eval" / "example0001_sources" / "foreground0_sound.wav").unlink()
    with pytest.raises(UserError, match=r"1 source files listed in eval_example_list\.txt are missing under .*: "
                                        r"eval/example0001_sources/foreground0_sound\.wav"):
        fuss.clips(fuss_options(root))
    listing = root / "eval_example_list.txt"
    listing.write_text("eval/example0000.wav " + "eval/example0000_sources/background0_sound.wav\n")
    with pytest.raises(UserError, match=r":1: expected a mixture and 1-4 source paths separated by tabs, found 1 fields"):
        fuss.clips(fuss_options(root))


def test_fuss_end_to_end_mixture_copy_baseline(fuss_root, tmp_path, cache):
    argv = ["--dataset", "fuss", "--data-folder", str(fuss_root), "--engine", "passthrough",
            "--results-folder", str(tmp_path / "r"), "--quiet",
            "--metric", "fuss_sisnr", "--metric", "fuss_sisnri", "--metric", "fuss_under_separated",
            "--metric", "fuss_over_separated", "--metric", "fuss_scored_pairs", "--metric", "si_sdr"]
    assert main(argv) == 0
    summary, rows = results(tmp_path / "r" / "fuss", "passthrough")
    assert summary["clips"] == 5 and summary["failures"] == 0
    one = cell(summary, sources="1")["metrics"]
    # One source: the mixture is that source; SI-SNR hits the eps ceiling of +80 dB.
    assert one["fuss_sisnr"]["mean"] == pytest.approx(80.0, abs=1e-6)
    for count in ("2", "3", "4"):
        metrics = cell(summary, sources=count)["metrics"]
        assert metrics["fuss_sisnri"]["mean"] == pytest.approx(0.0, abs=1e-9)  # the mixture itself
        assert metrics["fuss_under_separated"]["mean"] == 0.0
        # The mono output copied to 4 slots: 4 active estimates.
        assert metrics["fuss_over_separated"]["mean"] == (0.0 if count == "4" else 1.0)
        assert metrics["fuss_scored_pairs"]["mean"] == float(count)
    assert all("si_sdr" not in row["scores"] and "si_sdr" not in row["undefined"] for row in rows)
    pooled = cell(summary, sources="2-4")
    assert pooled["pooled"] and pooled["clips"] == sum(cell(summary, sources=c)["clips"] for c in ("2", "3", "4"))
    assert summary["worst_cell"]["metric"] == "fuss_sisnri"
    report = (tmp_path / "r" / "fuss" / "report.md").read_text()
    assert "| 2-4 | passthrough |" in report and "fuss_sisnri" in report.split("## Per cell")[1].splitlines()[2]


# =========================================================================== FUSS: metric vs an independent implementation

EPS = 1e-8


def independent_si_snr(reference: np.ndarray, estimate: np.ndarray) -> float:
    """REFERENCE section 1, written out: rho = <y, yhat> / (|y| |yhat| + eps)."""
    rho = np.dot(reference, estimate) / (np.linalg.norm(reference) * np.linalg.norm(estimate) + EPS)
    return 10 * math.log10((rho**2 + EPS) / (1 - rho**2 + EPS))


def independent_fuss(references: np.ndarray, estimates: np.ndarray) -> dict:
    references = [np.asarray(r, dtype=np.float64) for r in references]
    estimates = [np.asarray(e, dtype=np.float64) for e in estimates]
    mixture = sum(references)
    best, best_total = None, -math.inf
    for permutation in itertools.permutations(range(len(references))):
        total = 0.0
        for j in range(len(references)):
            total += independent_si_snr(references[j], estimates[permutation[j]])
        if total > best_total:
            best, best_total = permutation, total
    matched = [estimates[i] for i in best]
    ref_power = [float(np.mean(r**2)) for r in references]
    ref_active = [math.sqrt(p) > 1e-8 for p in ref_power]
    quietest = min(p for p, active in zip(ref_power, ref_active) if active)
    est_active = [float(np.mean(e**2)) > 0.01 * quietest for e in matched]
    pairs = [j for j in range(len(references)) if ref_active[j] and est_active[j]]
    sisnr = [independent_si_snr(references[j], matched[j]) for j in pairs]
    sisnri = [independent_si_snr(references[j], matched[j]) - independent_si_snr(references[j], mixture) for j in pairs]
    return {
        "permutation": best,
        "pairs": len(pairs),
        "sisnr": sum(sisnr) / len(sisnr) if pairs else None,
        "sisnri": sum(sisnri) / len(sisnri) if pairs else None,
        "sisnri_pairs": sisnri,
        "under": sum(est_active) < sum(ref_active),
        "over": sum(est_active) > sum(ref_active),
    }


def signals(count: int, n: int = 4000, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(0.3 / (k + 1)) * rng.standard_normal(n) for k in range(count)]


def fuss_inputs(references, estimates) -> MetricInputs:
    references = np.asarray(references, dtype=np.float32)
    estimates = np.asarray(estimates, dtype=np.float32)
    noisy = references.sum(axis=0)
    return MetricInputs(output=estimates, clean=np.zeros_like(noisy), noisy=noisy, sample_rate=FUSS_RATE,
                        reference_sources=references, output_sources=estimates)


def check_against_independent(references, estimates) -> dict:
    metric_inputs = fuss_inputs(references, estimates)
    expected = independent_fuss(metric_inputs.reference_sources, metric_inputs.output_sources)
    scores = fuss_sisnr.fuss_scores(metric_inputs.reference_sources, metric_inputs.output_sources, metric_inputs.noisy)
    assert scores.permutation == expected["permutation"]
    assert fuss_sisnr.fuss_scored_pairs_metric(metric_inputs) == expected["pairs"]
    assert fuss_sisnr.fuss_under_separated_metric(metric_inputs) == float(expected["under"])
    assert fuss_sisnr.fuss_over_separated_metric(metric_inputs) == float(expected["over"])
    if expected["pairs"]:
        assert float(fuss_sisnr.fuss_sisnr_metric(metric_inputs)) == pytest.approx(expected["sisnr"], abs=1e-4)
        improvement = fuss_sisnr.fuss_sisnri_metric(metric_inputs)
        assert float(improvement) == pytest.approx(expected["sisnri"], abs=1e-4)
        # The items the cells pool: one per scored pair, with their spread.
        assert improvement.count == expected["pairs"]
        assert improvement.variance == pytest.approx(float(np.var(expected["sisnri_pairs"])), rel=1e-4, abs=1e-3)
    return expected


def test_fuss_si_snr_of_a_known_snr():
    reference, noise = signals(2)
    noise *= np.linalg.norm(reference) / np.linalg.norm(noise) * 10 ** (-10 / 20)
    noise -= np.dot(noise, reference) / np.dot(reference, reference) * reference  # orthogonal: SI-SNR exactly 10 dB
    noise *= np.linalg.norm(reference) / np.linalg.norm(noise) * 10 ** (-10 / 20)
    assert fuss_sisnr.si_snr(3 * (reference + noise), reference) == pytest.approx(10.0, abs=1e-6)
    # The eps ceiling, whatever the level: the published code divides each signal by its
    # norm first. (Written as rho = <y, yhat> / (|y| |yhat| + eps), a quiet exact copy
    # would read lower, so near the ceiling we follow the code, not that shorthand.)
    assert fuss_sisnr.si_snr(reference, reference) == pytest.approx(80.0, abs=1e-6)
    assert fuss_sisnr.si_snr(1e-4 * reference, 1e-4 * reference) == pytest.approx(80.0, abs=1e-6)
    assert independent_si_snr(1e-4 * reference, 1e-4 * reference) < 70
    assert fuss_sisnr.si_snr(np.zeros(100), np.ones(100)) == pytest.approx(-80.0, abs=1e-6)  # and floor


def test_fuss_swapped_outputs_are_matched_back():
    r0, r1, n0, n1 = signals(4, seed=2)
    zero = np.zeros_like(r0)
    expected = check_against_independent([r0, r1, zero, zero], [r1 + 0.1 * n1, r0 + 0.05 * n0, zero, zero])
    assert expected["permutation"][:2] == (1, 0) and expected["pairs"] == 2
    assert not expected["under"] and not expected["over"]


def test_fuss_inactive_reference_is_not_scored_and_an_extra_output_is_over_separation():
    r0, r2, n0, n2, extra = signals(5, seed=3)
    zero = np.zeros_like(r0)
    expected = check_against_independent([r0, zero, r2, zero], [r2 + 0.1 * n2, 0.5 * extra, r0 + 0.1 * n0, zero])
    assert expected["pairs"] == 2 and expected["over"]


def test_fuss_estimate_25_db_below_the_quietest_reference_does_not_count():
    r0, r1, n0 = signals(3, seed=4)
    zero = np.zeros_like(r0)
    references = [r0, r1, zero, zero]
    faint = check_against_independent(references, [r0 + 0.1 * n0, r1 * 10 ** (-25 / 20), zero, zero])
    assert faint["pairs"] == 1 and faint["under"]
    # Only the loud pair is scored, though the faint estimate alone would reach +80 dB.
    loud_pair = independent_si_snr(r0, r0 + 0.1 * n0)
    assert float(fuss_sisnr.fuss_sisnr_metric(fuss_inputs(references, [r0 + 0.1 * n0, r1 * 10 ** (-25 / 20), zero, zero]))) == \
        pytest.approx(loud_pair, abs=1e-4)
    within = check_against_independent(references, [r0 + 0.1 * n0, (r1 + 0.01 * n0) * 10 ** (-15 / 20), zero, zero])
    assert within["pairs"] == 2 and not within["under"]


def test_fuss_under_separated_output_merges_two_sources():
    r0, r1, r2, noise = signals(4, seed=5)
    zero = np.zeros_like(r0)
    expected = check_against_independent([r0, r1, r2, zero], [r0 + r1, r2 + 0.01 * noise, zero, zero])
    assert expected["under"] and expected["pairs"] == 2


def test_fuss_fewer_outputs_than_references_are_padded_with_silence():
    r0, r1, n0 = signals(3, seed=6)
    zero = np.zeros_like(r0)
    references = np.asarray([r0, r1, zero, zero], dtype=np.float32)
    two = np.asarray([r0 + 0.1 * n0, r1], dtype=np.float32)
    padded = np.concatenate([two, np.zeros((2, len(r0)), dtype=np.float32)])
    assert fuss_sisnr.fuss_sisnr_metric(fuss_inputs(references, two)) == \
        fuss_sisnr.fuss_sisnr_metric(fuss_inputs(references, padded))
    with pytest.raises(MetricUndefined, match="no active reference source"):
        fuss_sisnr.fuss_sisnr_metric(fuss_inputs(np.zeros((4, 100)), np.ones((4, 100))))
