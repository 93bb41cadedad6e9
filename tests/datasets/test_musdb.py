"""The musdb adapter on a fixture in MUSDB18-HQ's published layout."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import soundfile

from nsbench.audio.files import read_audio
from nsbench.builtin.datasets import musdb
from nsbench.cli import main
from nsbench.plugins.errors import UserError

from tests.helpers.dataset_layouts import MUSDB_RATE, TRACKS, cell, make_musdb, musdb_options, results, stereo, tone, write


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
