"""The wer metric: normalisation and jiwer on hand-checked examples, PocketSphinx
on real speech of known text (VoiceBank and folder layouts), shared transcripts,
per-metric failure, and a recogniser plugin chosen with --recogniser.

PocketSphinx costs ~0.5 CPU s per second of audio: the tests transcribe about
a dozen 4-second clips in all, and share the clean and noisy transcripts
through the session's transcript cache as a run does.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile

from tests.helpers.paths import SHARED_AUDIO
from tests.helpers.plugins import cli_with
from nsbench.cli import main
from nsbench.plugins.hookspecs import hookimpl
from nsbench.recognition import TranscriptStore, normalise_transcript, word_error_rate
from nsbench.plugins.records import Clip
from nsbench.plugins.errors import MetricUndefined
from nsbench.plugins.specs import RecogniserSpec

# CMU ARCTIC speaker aew reading the first three ARCTIC prompts (real speech, in
# ../shared/audio): what the speaker says, as the ARCTIC prompt list writes it.
ARCTIC = {
    "cmu_arctic_aew_a0001_M": "Author of the danger trail, Philip Steels, etc.",
    "cmu_arctic_aew_a0002_M": "Not at this particular case, Tom, apologized Whittemore.",
    "cmu_arctic_aew_a0003_M": "For the twentieth time that evening the two men shook hands.",
}
NOISE_FILE = "speechcommands_doing_the_dishes.wav"
# The recordings beside the repository; a checkout elsewhere (a git worktree) may point here.
AUDIO = Path(os.environ.get("NSBENCH_SHARED_AUDIO", SHARED_AUDIO))
needs_shared_audio = pytest.mark.skipif(
    not all((AUDIO / "speech" / f"{stem}.wav").is_file() for stem in ARCTIC)
    or not (AUDIO / "noise" / NOISE_FILE).is_file(),
    reason="needs the real recordings in ../shared/audio",
)
RUN = ["--metric", "wer", "--quiet", "--no-html", "--no-plots", "--jobs", "1"]


@pytest.fixture(autouse=True)
def fresh_recogniser():
    """Each test starts with a recogniser built afresh, as a new process would.
    PocketSphinx's decoder kept its noise statistics from one utterance to the
    next (a 10 dB clip read 0.75 alone and 0.88 after the suite's other WER
    tests); the recogniser now resets them per clip
    (test_a_noisy_clip_reads_the_same_alone_and_after_another_clip), and this
    keeps each test's figures independent of the others all the same."""
    from nsbench.recognition import built

    built.cache_clear()
    yield
    built.cache_clear()
# The default demo speaks with real voices (issue 11); PocketSphinx cannot read
# the synthetic set's espeak-ng voices (its WER there is about 1.0 at every SNR).
DEMO_DATASET, DEMO_NOISE = "demo", "stationary"


# --------------------------------------------------------------------------- normalisation and jiwer


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("Hello, World!", "hello world"),
        ("  The CAT  sat.\n", "the cat sat"),
        ("Don’t stop: it's 4:30 p.m.", "don't stop it's 4 30 p m"),  # typographic apostrophe; numbers kept as written
        ("a well-known 'quoted' dogs' bone", "a well known quoted dogs bone"),
        ("God bless 'em", "god bless em"),
        ("?!...", ""),
    ],
)
def test_normalisation(text, normalised):
    assert normalise_transcript(text) == normalised


@pytest.mark.parametrize(
    ("reference", "hypothesis", "expected"),
    [
        ("the cat sat on the mat", "the cat sat on the mat", 0.0),
        ("the cat sat on the mat", "the bat sat on the mat", 1 / 6),  # one substitution
        ("the cat sat on the mat", "the cat on the mat", 1 / 6),  # one deletion
        ("the cat sat on the mat", "the cat sat down on the mat", 1 / 6),  # one insertion
        ("the cat sat on the mat", "a cat sat mat on the mat today", 3 / 6),  # 1 substitution + 2 insertions
        ("The cat, sat.", "the CAT sat", 0.0),  # punctuation and case do not count
        ("forty two", "42", 1.0),  # numbers as written: 1 substitution + 1 deletion over 2 words
        ("the cat sat", "", 1.0),  # nothing heard: every word deleted
    ],
)
def test_word_error_rate_on_hand_checked_examples(reference, hypothesis, expected):
    assert word_error_rate(reference, hypothesis) == pytest.approx(expected)


def test_an_empty_reference_has_no_word_error_rate():
    with pytest.raises(MetricUndefined, match="reference transcript has no words"):
        word_error_rate(" ... ", "anything at all")


# --------------------------------------------------------------------------- fixtures of real speech


def arctic(stem: str) -> np.ndarray:
    audio, rate = soundfile.read(AUDIO / "speech" / f"{stem}.wav", dtype="float32")
    assert rate == 16000
    return audio


def noise_like(clean: np.ndarray, snr_db: float, offset: int) -> np.ndarray:
    from nsbench.synth.noises import mix_at_snr

    noise, _ = soundfile.read(AUDIO / "noise" / NOISE_FILE, dtype="float32")
    return mix_at_snr(clean, noise[offset : offset + len(clean)], snr_db)[1]


def write_voicebank(root: Path, snr_db: float) -> Path:
    """VoiceBank-DEMAND's test layout at 48 kHz: clean_testset_wav/, noisy_testset_wav/, testset_txt/."""
    import soxr

    for number, (stem, text) in enumerate(ARCTIC.items(), start=1):
        clean = arctic(stem)
        noisy = clean + noise_like(clean, snr_db, 16000 * number)
        for folder, audio in (("clean_testset_wav", clean), ("noisy_testset_wav", noisy)):
            path = root / folder / f"p232_{number:03d}.wav"
            path.parent.mkdir(parents=True, exist_ok=True)
            soundfile.write(path, soxr.resample(audio, 16000, 48000), 48000, subtype="PCM_16")
        (root / "testset_txt").mkdir(exist_ok=True)
        (root / "testset_txt" / f"p232_{number:03d}.txt").write_text(text + "\n")
    return root


def write_folder(root: Path, snr_db: float, stems: tuple[str, ...]) -> Path:
    """The folder dataset with a transcripts.tsv."""
    lines = []
    for number, (stem, text) in enumerate(ARCTIC.items(), start=1):
        if stem not in stems:
            continue
        clean = arctic(stem)
        noisy = clean + noise_like(clean, snr_db, 16000 * number)
        for folder, audio in (("clean", clean), ("noisy", noisy)):
            (root / folder).mkdir(parents=True, exist_ok=True)
            soundfile.write(root / folder / f"{stem}.wav", audio, 16000, subtype="FLOAT")
        lines.append(f"{stem}.wav\t{text}")
    (root / "transcripts.tsv").write_text("\n".join(lines) + "\n")
    return root


def clip_records(results: Path, engine: str) -> list[dict]:
    return [json.loads(line) for line in (results / f"{engine}.clips.jsonl").read_text().splitlines()]


def mean(records: list[dict], name: str) -> float:
    return float(np.mean([record["scores"][name] for record in records]))


# --------------------------------------------------------------------------- PocketSphinx on real speech


@pytest.mark.slow
@needs_shared_audio
def test_pocketsphinx_on_a_voicebank_layout_with_testset_txt(tmp_path):
    """PocketSphinx's WER against the known text on ARCTIC speech with kitchen
    noise at 20 dB, written at 48 kHz and read by the voicebank adapter at 16
    kHz. Measured: 'author of the danger trail philips deals etc' (2 of 8
    words substituted), 'not at this particular case tom apologized with more'
    (whittemore: 1 substitution + 1 insertion over 8 words), the third without
    error. A property of PocketSphinx 5.1.1's model, not of our code."""
    data = write_voicebank(tmp_path / "vb", snr_db=20)
    assert main(["--dataset", "voicebank", "--data-folder", str(data), "--engine", "passthrough",
                 "--results-folder", str(tmp_path / "r"), *RUN]) == 0
    records = clip_records(tmp_path / "r" / "voicebank", "passthrough")
    assert [r["scores"]["wer_input"] for r in records] == pytest.approx([2 / 8, 2 / 8, 0 / 11])
    assert all(r["scores"]["wer"] == r["scores"]["wer_input"] and r["scores"]["wer_delta"] == 0 for r in records)
    assert {r["metric_notes"]["wer_reference"] for r in records} == {"dataset"}
    result = json.loads((tmp_path / "r" / "voicebank" / "passthrough.json").read_text())
    provenance = result["provenance"]["metric_options"]["wer"]
    assert provenance["recogniser"] == "pocketsphinx" and provenance["version"].startswith("5.1.1 (cmn=batch")
    assert any(path.endswith("en-us.lm.bin") for path in provenance["model_files"])
    assert all(len(digest) == 64 for digest in provenance["model_files"].values())


@needs_shared_audio
def test_transcripts_are_identical_run_to_run_and_independent_of_order():
    """Stores with no disk and no memory in common: the transcript is a function
    of the audio alone (PocketSphinx with batch CMN), whatever came before."""
    options = pocketsphinx_options()
    spec, fingerprint = options["recogniser"], options["fingerprint"]
    first, second = (TranscriptStore(spec, fingerprint, None) for _ in range(2))
    a, b = arctic("cmu_arctic_aew_a0003_M"), arctic("cmu_arctic_aew_a0001_M")
    heard = first.transcript(a, 16000)
    second.transcript(b, 16000)  # another utterance first
    assert second.transcript(a, 16000) == heard == "for the twentieth time that evening the two men shook hands"


@needs_shared_audio
def test_a_noisy_clip_reads_the_same_alone_and_after_another_clip():
    """PocketSphinx keeps its noise removal's statistics from one utterance to
    the next: without the reset per clip (wer.PocketSphinx.transcribe) clip B,
    ARCTIC a0003 with kitchen noise at 10 dB, read differently after clip A
    (a0001, the same noise) than alone. Clean speech hides it (the test above)."""
    pytest.importorskip("pocketsphinx")
    import importlib

    recogniser = importlib.import_module("nsbench.builtin.metrics.wer").PocketSphinx
    a = arctic("cmu_arctic_aew_a0001_M")
    a = a + noise_like(a, 10, 16000)
    b = arctic("cmu_arctic_aew_a0003_M")
    b = b + noise_like(b, 10, 3 * 16000)
    alone = recogniser().transcribe(b)
    after_a = recogniser()
    after_a.transcribe(a)
    assert after_a.transcribe(b) == alone
    assert alone  # some words heard: an empty transcript would pass for any state


@pytest.mark.slow
def test_on_the_demo_wer_grows_as_snr_falls_and_an_oracle_mask_lowers_it():
    """Passthrough on two clips of one noise category at -5 and 10 dB, against
    the recogniser's transcript of the clean files; the ideal ratio mask on
    the -5 dB clips."""
    from nsbench.plugins.metric_options import bind_options, metric_context
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.registry import build_registry
    from nsbench.run.engine_run import EngineRun
    from nsbench.run.runner import run_engine

    registry = build_registry(get_plugin_manager(load_entry_points=False))
    metrics, _ = bind_options([registry.metrics.get("wer").spec], lambda metric: {}, metric_context(registry))
    sources = registry.datasets.get(DEMO_DATASET).spec.clips({})
    cell = {snr: [s for s in sources if s.labels.get("noise") == DEMO_NOISE and s.labels.get("snr_db") == snr][:2]
            for snr in ("-5", "10")}

    def wer_of(engine: str, snr: str) -> list[dict]:
        outcomes = run_engine(EngineRun(registry.engines.get(engine).spec, {}, metrics), cell[snr])
        return [{"scores": outcome.record.scores} for outcome in outcomes]

    passthrough_5, passthrough_10, oracle_5 = wer_of("passthrough", "-5"), wer_of("passthrough", "10"), wer_of("oracle-irm", "-5")
    # Measured, each clip read as if alone: 1.0 at -5 dB, 0.85 at 10 dB, the oracle 0.15 (with
    # the noise statistics carried over from clip to clip, as before the reset, the gap was over 0.2).
    assert mean(passthrough_5, "wer") > mean(passthrough_10, "wer") + 0.1
    assert mean(oracle_5, "wer") < mean(passthrough_5, "wer")


@pytest.mark.slow
@needs_shared_audio
def test_wer_grows_as_snr_falls_and_an_oracle_mask_lowers_it(tmp_path):
    """Through the CLI on a folder dataset whose transcripts are known (so the
    reference is the dataset's text, not the recogniser's own transcript of
    the clean signal, as on the demo above).
    Passthrough: the -5 dB WER clearly above the 10 dB one. The ideal ratio
    mask (an oracle, the upper bound) lowers the -5 dB WER. The noisy
    transcripts are computed once: passthrough's output is its input.
    Measured (kitchen noise), each clip read as if alone: passthrough 0.75 and
    0.64 at 10 dB, 1.0 and 0.91 at -5 dB; the oracle's mean 0.125 there (before
    the recogniser's reset per clip, the second 10 dB clip read 0.45 after the first)."""
    results = {}
    stems = ("cmu_arctic_aew_a0001_M", "cmu_arctic_aew_a0003_M")  # two clips: PocketSphinx is slow
    for snr_db, engines in ((10, ["passthrough"]), (-5, ["oracle-irm"])):
        data = write_folder(tmp_path / f"snr{snr_db}", snr_db, stems)
        folder = tmp_path / f"r{snr_db}"
        argv = ["--dataset", "folder", "--data-folder", str(data), "--results-folder", str(folder), *RUN]
        assert main(argv + [arg for engine in engines for arg in ("--engine", engine)]) == 0
        results[snr_db] = folder / "folder"
    passthrough_10, passthrough_5 = (clip_records(results[snr], "passthrough") for snr in (10, -5))
    oracle_5 = clip_records(results[-5], "oracle-irm")
    assert {r["metric_notes"]["wer_reference"] for r in passthrough_5 + oracle_5} == {"dataset"}
    assert mean(passthrough_5, "wer") > mean(passthrough_10, "wer") + 0.2
    assert mean(oracle_5, "wer") < mean(passthrough_5, "wer") - 0.2
    assert mean(oracle_5, "wer_delta") < 0
    assert mean(oracle_5, "wer_input") == mean(passthrough_5, "wer")  # the same noisy transcripts


# --------------------------------------------------------------------------- the hook, failures, bad input


class CountingRecogniser:
    """Hears one word per 0.5 s of audio above -40 dBFS ("one two three ..."),
    and fails on a clip whose noisy input is the marked one."""

    WORDS = "one two three four five six seven eight".split()
    heard: list[int] = []  # the length of every clip transcribed, in this process

    def transcribe(self, audio: np.ndarray) -> str:
        self.heard.append(len(audio))
        if audio.size and abs(float(audio[0]) - 0.125) < 1e-6:
            raise RuntimeError("the service refused this clip")
        blocks = audio[: len(audio) // 8000 * 8000].reshape(-1, 8000)
        loud = [np.sqrt(np.mean(block.astype(np.float64) ** 2)) > 0.01 for block in blocks]
        return " ".join(word for word, heard in zip(self.WORDS, loud) if heard)


class CountingPlugin:
    @hookimpl
    def register_recognisers(self, register):
        register(RecogniserSpec(name="counting", factory=CountingRecogniser, description="counts loud half-seconds", version="1"))


def test_a_recogniser_plugin_is_used_when_named(tmp_path):
    """The plugin's recogniser transcribes, and its name and version reach the
    provenance. c0 has no text: its reference is the clean transcript. c1's
    noisy input carries the mark that makes the recogniser fail: its WER fails
    with the reason, its other metrics and the clip stand. c2's text has no
    words: WER undefined, not 0. c3's text is what the recogniser hears."""
    run_cli = cli_with(CountingPlugin())
    rate = 16000
    t = np.arange(2 * rate) / rate
    voice = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    data = tmp_path / "data"
    (data / "clean").mkdir(parents=True)
    (data / "noisy").mkdir()
    for index in range(4):
        noisy = voice.copy()
        if index == 1:
            noisy[0] = 0.125
        soundfile.write(data / "clean" / f"c{index}.wav", voice, rate, subtype="FLOAT")
        soundfile.write(data / "noisy" / f"c{index}.wav", noisy, rate, subtype="FLOAT")
    (data / "clean" / "c2.txt").write_text("...\n")
    (data / "clean" / "c3.txt").write_text("One, two, three, four.\n")
    assert run_cli(["--dataset", "folder", "--data-folder", str(data), "--engine", "passthrough", "--metric", "stoi",
                 "--recogniser", "counting", "--results-folder", str(tmp_path / "r"), *RUN]) == 0
    folder = tmp_path / "r" / "folder"
    records = {r["clip_id"]: r for r in clip_records(folder, "passthrough")}
    assert records["c0"]["scores"]["wer"] == 0.0 and records["c0"]["metric_notes"] == {"wer_reference": "asr_of_clean"}
    assert records["c1"]["undefined"]["wer"] == "metric wer raised RuntimeError: the service refused this clip"
    assert "stoi" in records["c1"]["scores"] and records["c1"]["error"] is None
    assert records["c2"]["undefined"]["wer"] == "the reference transcript has no words, so no word error rate"
    assert records["c3"]["scores"]["wer"] == 0.0 and records["c3"]["metric_notes"] == {"wer_reference": "dataset"}
    result = json.loads((folder / "passthrough.json").read_text())
    assert result["provenance"]["metric_options"]["wer"]["recogniser"] == "counting"
    assert result["provenance"]["metric_options"]["wer"]["version"] == "1"
    assert result["metric_notes"] == {"wer_reference": {"asr_of_clean": 1, "dataset": 1}}
    assert result["metrics"]["wer"]["n"] == 2


def test_transcripts_are_made_once_per_audio_for_every_engine_and_run(tmp_path):
    """Two clips, two engines: the clean and noisy transcripts once per clip
    (passthrough's output is its input: that one too), speex's outputs once
    each: 6 transcripts. The same run again takes all of them from the cache."""
    run_cli = cli_with(CountingPlugin())
    data = tmp_path / "data"
    rng = np.random.default_rng(3)
    for index in range(2):
        voice = (0.3 * np.sin(2 * np.pi * (220 + 20 * index) * np.arange(16000) / 16000)).astype(np.float32)
        for folder, audio in (("clean", voice), ("noisy", voice + 0.01 * rng.standard_normal(16000).astype(np.float32))):
            (data / folder).mkdir(parents=True, exist_ok=True)
            soundfile.write(data / folder / f"c{index}.wav", audio, 16000, subtype="FLOAT")
    # Counted in this process: --clip-timeout 0 keeps --jobs 1's clips here, not in a worker.
    argv = ["--dataset", "folder", "--data-folder", str(data), "--engine", "speex", "--recogniser", "counting",
            "--results-folder", str(tmp_path / "r"), *RUN, "--clip-timeout", "0"]
    CountingRecogniser.heard.clear()
    assert run_cli(argv) == 0
    assert len(CountingRecogniser.heard) == 6
    assert run_cli([*argv, "--rerun"]) == 0  # --rerun: transcripts anew, once each again
    assert len(CountingRecogniser.heard) == 12
    assert run_cli(argv) == 0
    assert len(CountingRecogniser.heard) == 12


def pocketsphinx_options() -> dict:
    from nsbench.plugins.metric_options import bind_options, metric_context
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.registry import build_registry

    registry = build_registry(get_plugin_manager(load_entry_points=False))
    return bind_options([registry.metrics.get("wer").spec], lambda metric: {}, metric_context(registry, use_cache=False))[1]["wer"]


def test_a_silent_output_deletes_every_word(tmp_path, monkeypatch):
    """An engine returning silence: WER 1.0 against the clean transcript."""
    from nsbench.plugins.metric_options import bind_options, metric_context
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.registry import build_registry
    from nsbench.plugins.records import MetricInputs

    manager = get_plugin_manager(load_entry_points=False)
    manager.register(CountingPlugin())
    registry = build_registry(manager)
    [metric], options = bind_options([registry.metrics.get("wer").spec], lambda metric: {"recogniser": "counting"},
                                     metric_context(registry, use_cache=False))
    voice = np.full(16000, 0.3, dtype=np.float32)
    inputs = MetricInputs(output=np.zeros_like(voice), clean=voice, noisy=voice, sample_rate=16000)
    assert metric.func(inputs) == {"wer": 1.0, "wer_input": 0.0, "wer_delta": 1.0, "wer_reference": "asr_of_clean"}


def test_a_failing_metric_fails_alone_and_is_not_cached(tmp_path):
    """Through the run loop with a cache: the metric that raises and the one
    that returns NaN are undefined with their reasons, SI-SDR stands, the clip
    has no error; on a second run the failures are computed again (a failure
    may pass), the good score comes from the cache."""
    from nsbench.store import cache
    from nsbench.store.keys import Identity
    from nsbench.builtin.engines.passthrough import Passthrough
    from nsbench.plugins.manager import get_plugin_manager
    from nsbench.plugins.registry import build_registry
    from nsbench.run.engine_run import EngineRun
    from nsbench.run.runner import run_engine
    from nsbench.plugins.records import ClipSource
    from nsbench.plugins.specs import EngineSpec, MetricSpec

    calls = []

    def raising(inputs):
        calls.append("raising")
        raise RuntimeError("the service is down")

    def not_a_number(inputs):
        calls.append("nan")
        return {"a": 1.0, "b": float("nan")}

    registry = build_registry(get_plugin_manager(load_entry_points=False))
    metrics = [
        registry.metrics.get("si_sdr").spec,
        MetricSpec(name="raising", func=raising, unit="", higher_is_better=True, description="", ignores=""),
        MetricSpec(name="pair", func=not_a_number, unit="", higher_is_better=True, description="", ignores="",
                   values={"a": "first", "b": "second"}),
    ]
    rate = 16000
    clean = np.sin(2 * np.pi * 200 * np.arange(rate) / rate).astype(np.float32)
    clip = Clip(clip_id="c", noisy=clean + 0.1, clean=clean, sample_rate=rate)
    spec = EngineSpec(name="passthrough", factory=lambda options: Passthrough(), description="", sample_rate=None, delay=0)
    store = cache.Cache(tmp_path)
    identity = Identity("engine", {m.name: m.name for m in metrics}, "checks")
    for run in range(2):
        [outcome] = run_engine(EngineRun(spec, {}, metrics, cache=store, identity=identity), [ClipSource("c", lambda: clip)])
        record = outcome.record
        assert record.error is None and list(record.scores) == ["si_sdr"]
        assert record.undefined == {"raising": "metric raising raised RuntimeError: the service is down",
                                    "pair": "metric pair returned nan for b"}
        assert record.from_cache == (run == 1)
    assert calls == ["raising", "nan"] * 2
