"""``--metric urgent``: what nsbench has of the metrics the URGENT challenges
(2024-2026) rank systems on, each in URGENT's category (the categories are
declared on the metrics themselves, MetricSpec.category; nsbench.ranking
applies the rule).

URGENT 2025's list and nsbench's share of it: non-intrusive DNSMOS (here all
four DNSMOS figures), NISQA and UTMOS (not here: their models download at first
use); intrusive PESQ (``pesq_wb``), ESTOI, SDR (``bss_sdr``, URGENT's
fast_bss_eval call), MCD (not here) and LSD (``lsd``); downstream-task
independent SpeechBERTScore and LPS (not here); downstream-task dependent
speaker similarity (not here) and character accuracy (``wer``, words instead
of characters, with the recogniser --recogniser picks). The set is partial: a
member this installation lacks is left out, and the run names it.
"""
from __future__ import annotations

from typing import Callable

from nsbench import MetricSetSpec, hookimpl

MEMBERS = ("dnsmos_ovrl", "dnsmos_sig", "dnsmos_bak", "dnsmos_p808", "pesq_wb", "estoi", "bss_sdr", "lsd", "wer")


@hookimpl
def register_metric_sets(register: Callable[[MetricSetSpec], None]) -> None:
    register(MetricSetSpec(
        name="urgent",
        metrics=MEMBERS,
        description="what nsbench has of URGENT 2025's ranked metrics (DNSMOS, PESQ, ESTOI, SDR, LSD, WER), "
                    "ranked by its rule; NISQA, UTMOS, MCD, SpeechBERTScore, LPS and speaker similarity are not here",
        partial=True,
    ))
