"""P.835's screening trials (after ITU-T P.808's crowdsourcing procedure), added
to every part and shuffled among the others, indistinguishable on the page:

- a trapping trial: a voice asks for one answer on every scale; a listener who
  gives another was not listening;
- two gold trials with known answers on the background scale: a clean
  synthetic voice (background "not noticeable", 5) and the same voice in loud
  white noise (background "very intrusive", 1); an answer more than
  ``GOLD_TOLERANCE`` away fails.

The voices come from espeak-ng (nsbench.synth, in its wheel: no download).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nsbench.listen import stimuli

ANSWER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
GOLD_TOLERANCE = 1
GOLD_SENTENCE = "The birch canoe slid on the smooth planks."  # Harvard sentence list 1
GOLD_NOISE_SNR_DB = -5.0


def trap_answer(part: int) -> int:
    """Varies over parts, so a listener cannot learn it from another's part; never the scale's end."""
    return 2 + part % 3


def synthetic(text: str, rate: int) -> np.ndarray:
    from nsbench.synth.speech import speak  # espeak-ng only where a P.835 test is built

    return speak(text, "m1", sample_rate=rate).astype(np.float64)


def p835_trials(folder: Path, rate: int, part: int, trial_key: dict[str, Any],
                stimulus_key: dict[str, Any]) -> list[dict[str, Any]]:
    """The screening trials of one part, their files written and their expected answers in the key."""

    answer = trap_answer(part)
    voice = synthetic(GOLD_SENTENCE, rate)
    noise = np.random.default_rng(part).standard_normal(len(voice))
    noise *= np.sqrt(np.mean(voice**2) / np.mean(noise**2)) * 10 ** (-GOLD_NOISE_SNR_DB / 20)
    made = {
        "trap": (synthetic(f"Attention check: answer {ANSWER_WORDS[answer]} on every question.", rate),
                 {scale: answer for scale in ("sig", "bak", "ovrl")}),
        "gold": (voice, {"bak": 5}),
        "gold_noisy": (voice + noise, {"bak": 1}),
    }
    trials = []
    for kind, (audio, expected) in made.items():
        level = stimuli.equalise({"s": stimuli.cut(audio, rate, len(audio) / rate)}, rate)["s"]
        name, trial = f"audio/{stimuli.token()}.wav", "t" + stimuli.token()
        stimuli.write(folder / name, level.audio, rate)
        clip, condition = "c" + stimuli.token(), "k" + stimuli.token()
        stimulus_key[name] = {"clip": clip, "condition": condition, "loudness_lufs": level.loudness, "gain_db": level.gain_db}
        trial_key[trial] = {"kind": "trap" if kind == "trap" else "gold", "expected": expected, "part": part + 1,
                            "clip": clip, "conditions": {condition: condition},
                            "tolerance": 0 if kind == "trap" else GOLD_TOLERANCE}
        trials.append({"trial": trial, "clip": clip, "condition": condition, "audio": name})
    return trials
