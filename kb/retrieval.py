"""Hybrid retrieval: BM25 + dense + error signatures (+ log signals), fused per article with RRF."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from kb.articles import Article
from kb.embedding import Embedder
from kb.families import article_families, families_named
from kb.index import LoadedIndex
from kb.launchers import article_launchers, launchers_named, title_tools, tools_named
from kb.modality import is_vision_only, mentions_vision
from kb.signatures import SignatureMatcher, only_says_a_process_died
from kb.text import join_cjk_bigrams, metric_statements, tokenize

RRF_K = 10  # rank-fusion constant; 10 vs 30 measured: same MRR, 10 gives better hit@3
BM25_RELATIVE_FLOOR = 0.3  # a BM25 match below this share of the best one is dropped
# An anomaly is a specific fact ("loss is nan from step 120"): only articles that say nearly as
# much about it as the best one get its (strong) vote, not those sharing the word "loss".
ANOMALY_RELATIVE_FLOOR = 0.6
DENSE_CANDIDATES = 64
# Weights first chosen with `kb eval` on dev + the natural working sample (107 reports): the
# log's setting (precision, model, flags) only as a light boost, since stronger made hub articles
# win everything; what the run did (an anomaly the analyzer detected) counts more. BM25 0.5 -> 1.5,
# stated 1.0 -> 1.5, hint 3.0 -> 4.0 in session 15, where leave-one-set-out searches over dev and
# the 17 work samples agreed. Measured with kb eval on those 753 in-scope reports (1079 articles),
# together with the gate below and abstention over the cases shown: 286 -> 300 right modes first,
# 450 -> 474 in the top 3, dev unchanged. BM25 2.0, the searches' own pick, cost dev three first
# places in tune_fusion.py: exact strings and flag names matter, but not above meaning.
WEIGHTS = {
    "signature": 2.0,
    "bm25": 1.5,
    "dense": 1.5,
    "signals": 0.3,
    "anomalies": 2.0,
    "stated": 1.5,
    "context": 0.3,
    "hint": 4.0,
}
# The log's signals ("fp16 enabled", "loss fell to 0.0 at step 40") are compared with what an
# article says about when it happens (titles, symptoms, signatures, conditions), not its prose:
# every Cause/Why section mentions fp16 or loss, so matching them there says nothing.
SIGNAL_SECTIONS = ("summary", "signatures")
# A case whose own words say "grad_norm nan" does not fit a run whose grad_norm is exactly 0
# (no gradient at all), nor the other way round: its fused score is scaled by this.
CONTRADICTED_SHARE = 0.5
# A case limited to some model families, for a report that names no model and does not carry the
# case's error string: nothing says the report is about those models, so a general case that fits
# as well is likelier. Over dev + every natural sample (685 in-scope reports) 0.9 moved two
# reports to the right mode first and none away; 0.8 cost one. The same share for a case whose
# title names a tool (Unsloth, LLaMA-Factory, Megatron ...) the report does not name: over dev and
# the work samples (753 in-scope reports, 1067 articles) five more right modes first (two on dev),
# none fewer, one fewer in the top 3.
UNNAMED_FAMILY_SHARE = 0.9
# How much other fitting cases of one failure mode add to its best case's score when modes are
# ordered (see order_by_mode), and how deep in the fused list they count; shares 0.05-0.3 and
# depths 5-40 were tried over dev and the work samples (753 in-scope reports, 1079 articles):
# larger shares or deeper lists cost dev (share 0.2: 29 -> 28 of 42 first; depth 40: 27).
MODE_SUPPORT_SHARE = 0.1
MODE_SUPPORT_DEPTH = 20
# Support counts only for a mode whose best case scores at least this share of the top case:
# a mode that fits clearly worse must not overtake by having many articles (fp16 overflow, with
# many cases, outranked the LoRA reward-model case for a LoRA reward model's nan loss). Measured
# with kb eval on those reports: 263 -> 286 right modes first, 445 -> 450 in the top 3, dev and the
# seed cases unchanged; ungated gave 295 first but the seed case fell to second. 0.85 -> 0.87 with
# session 15's weights, under which the Chinese seed case's fp16 neighbour scores 0.864 of it
# (302 -> 301 first places in tune_fusion.py's simulation).
MODE_SUPPORT_GATE = 0.87
# A case listing more stages than this (or "any") is not about the report's stage in particular.
STAGE_SPECIFIC_MAX = 2
CONTRADICTION_METRICS = ("grad_norm",)  # loss 0 can be a nan hidden by the Trainer's filter
# Failure modes that only fp16 training has: overflow past 65504, underflow of small gradients,
# DeepSpeed's dynamic loss scaling and GradScaler's unscale. bf16 has float32's range and no loss
# scaling, so a run that states bf16 (and not fp16) cannot be one of them unless the case's own
# error string matched.
FP16_ONLY_MODES = frozenset(
    {
        "fp16-overflow-nan",
        "fp16-underflow-large-model",
        "deepspeed-loss-scale",
        "fp16-unscale-trainable-params",
    }
)
_METRIC_LINE = re.compile(r"'(?:loss|grad_norm|eval_loss)'|train_loss")
# Dense cosine range of the bundled e5 model on this corpus, used to place a hit on 0..1
# (measured with `kb eval`; see README, Quality).
DENSE_FLOOR, DENSE_CEIL = 0.80, 0.92
HINT_CONFIDENCE = 0.25


@dataclass(frozen=True)
class Hit:
    article: Article
    score: float  # fused RRF score, higher is better; comparable only within one query
    rank: int  # 1-based
    confidence: float  # 0..1, comparable across queries; below the threshold kb abstains
    evidence: list[str] = field(default_factory=list)  # why it matched, in words a user reads
    signatures: list[str] = field(default_factory=list)  # error signatures found in the query
    evidence_zh: list[str] = field(default_factory=list)  # the same reasons, for a Chinese answer

    def reasons(self, language: str) -> list[str]:
        """Why it matched, in the answer's language (English when no Chinese form exists)."""
        return self.evidence_zh if language == "zh" and self.evidence_zh else self.evidence

    def to_dict(self) -> dict:
        return {
            "article_id": self.article.id,
            "failure_mode": self.article.failure_mode,
            "title": self.article.title,
            "score": round(self.score, 5),
            "confidence": round(self.confidence, 3),
            "evidence": self.evidence,
        }


@dataclass(frozen=True)
class QueryContext:
    """What the log analyzer learned, in plain values (kb does not depend on `assistant`)."""

    phrases: tuple[str, ...] = ()  # "loss fell to 0.0 at step 40", "fp16 enabled", ...
    anomalies: tuple[str, ...] = ()  # only what the run did: "loss is nan from step 120"
    stated: tuple[str, ...] = ()  # metric values stated in words: "grad_norm is nan"
    stage: str | None = None
    framework: str | None = None
    # Failure modes the log itself points at (e.g. "works after downgrading" -> a version
    # mismatch); articles of these modes get a ranked list of their own in the fusion.
    hinted_modes: tuple[str, ...] = ()
    precision: str | None = None  # training precision the log states (fp16, bf16, fp32 ...)
    # Library versions the log shows, as (package, version) pairs: ("transformers", "4.31.0").
    versions: tuple[tuple[str, str], ...] = ()


@dataclass
class _Candidate:
    ranks: dict[str, int] = field(default_factory=dict)
    dense_cos: float = 0.0
    dense_section: str = ""
    bm25_frac: float = 0.0
    bm25_terms: list[str] = field(default_factory=list)
    bm25_section: str = ""
    signatures: list[str] = field(default_factory=list)
    signal_terms: list[str] = field(default_factory=list)
    contradicts: str = ""  # the logged value this case's own words disagree with
    family_unconfirmed: bool = False  # its models or title's tool are ones the report never names


class Retriever:
    def __init__(self, index: LoadedIndex, embedder: Embedder):
        self.index = index
        self.embedder = embedder
        self.matcher = SignatureMatcher(list(index.articles.values()))
        self._chunk_article = [c.article_id for c in index.chunks]
        self._chunk_section = np.array([c.section for c in index.chunks])
        self._claims = {aid: _metric_claims(a) for aid, a in index.articles.items()}
        self._vision_only = {aid for aid, a in index.articles.items() if is_vision_only(a)}
        self._families = {aid: article_families(a) for aid, a in index.articles.items()}
        self._launchers = {aid: article_launchers(a) for aid, a in index.articles.items()}
        self._title_tools = {aid: title_tools(a) for aid, a in index.articles.items()}
        # Cases written for one or two stages: only they gain from the report's stage.
        self._stage_cases = {aid for aid, a in index.articles.items() if _stage_specific(a.stages)}

    # --- single signals (also the eval baselines) -------------------------------------
    def bm25_articles(
        self, text: str, sections: tuple[str, ...] = (), floor: float = BM25_RELATIVE_FLOOR
    ) -> tuple[list[str], dict[str, _Candidate]]:
        terms = tokenize(text)
        scores = self.index.bm25.scores(terms)
        if sections:
            scores = np.where(np.isin(self._chunk_section, sections), scores, 0.0)
        best: dict[str, tuple[float, int]] = {}
        for doc in np.flatnonzero(scores > 0):
            aid = self._chunk_article[doc]
            if aid not in best or scores[doc] > best[aid][0]:
                best[aid] = (float(scores[doc]), int(doc))
        ceiling = self._bm25_ceiling(terms)
        order = sorted(best, key=lambda a: -best[a][0])
        # Articles that share only a common word with the query ("training") are not evidence.
        if order:
            cutoff = best[order[0]][0] * floor
            order = [a for a in order if best[a][0] >= cutoff]
        details = {}
        for aid in order[:DENSE_CANDIDATES]:
            score, doc = best[aid]
            details[aid] = _Candidate(
                bm25_frac=score / ceiling if ceiling else 0.0,
                bm25_terms=self.index.bm25.matched_terms(terms, doc)[:6],
                bm25_section=self.index.chunks[doc].section,
            )
        return order, details

    def _bm25_ceiling(self, terms: list[str]) -> float:
        # The score a chunk would get by containing every query term once: normalises BM25
        # so that a query of rare, all-matching terms scores near 1 whatever its length.
        ids = self.index.bm25.term_ids(terms)
        if not ids:
            return 0.0
        return float(self.index.bm25.weights[ids].max(axis=1).sum())

    def dense_articles(self, text: str) -> tuple[list[str], dict[str, tuple[float, str]]]:
        query = self.embedder.encode_queries([text])
        scores, ids = self.index.vectors.search(query, DENSE_CANDIDATES)
        best: dict[str, tuple[float, str]] = {}
        for score, cid in zip(scores[0], ids[0], strict=True):
            if cid < 0:
                continue
            chunk_id = self.index.dense_ids[cid]
            aid = self._chunk_article[chunk_id]
            if aid not in best:
                best[aid] = (float(score), self.index.chunks[chunk_id].section)
        return list(best), best

    # --- fused --------------------------------------------------------------------------
    def search(self, text: str, k: int = 5, context: QueryContext | None = None) -> list[Hit]:
        context = context or QueryContext()
        return self.rank(self.candidates(text, context), k, context)

    def candidates(self, text: str, context: QueryContext) -> dict[str, _Candidate]:
        """Every article some channel found, with its rank in each channel (before fusion).

        Kept apart from `rank` so that weights can be tuned over cached candidates
        (scripts/tune_fusion.py) without running the channels again.
        """
        cands: dict[str, _Candidate] = {}

        def cand(aid: str) -> _Candidate:
            return cands.setdefault(aid, _Candidate())

        matches = self.matcher.match(text)
        # "ChildFailedError" only says a worker died: when the log also carries an error string
        # that names why (SIGKILL, a CUDA error), the wrapper's triage case gets no signature vote.
        says_why = {m.article_id for m in matches if not only_says_a_process_died(m.signature)}
        ranked = [m for m in matches if m.article_id in says_why] if says_why else matches
        for rank, aid in enumerate(_dedupe(m.article_id for m in ranked), 1):
            cand(aid).ranks["signature"] = rank
        for m in matches:
            if m.signature not in cand(m.article_id).signatures:
                cand(m.article_id).signatures.append(m.signature)

        bm25_order, bm25_details = self.bm25_articles(text)
        for rank, aid in enumerate(bm25_order[:DENSE_CANDIDATES], 1):
            c = cand(aid)
            c.ranks["bm25"] = rank
            d = bm25_details[aid]
            c.bm25_frac, c.bm25_terms, c.bm25_section = d.bm25_frac, d.bm25_terms, d.bm25_section

        dense_order, dense_best = self.dense_articles(text)
        for rank, aid in enumerate(dense_order, 1):
            c = cand(aid)
            c.ranks["dense"] = rank
            c.dense_cos, c.dense_section = dense_best[aid]

        if context.phrases:
            signal_text = "\n".join(context.phrases)
            sig_order, sig_details = self.bm25_articles(signal_text, SIGNAL_SECTIONS)
            for rank, aid in enumerate(sig_order[:DENSE_CANDIDATES], 1):
                c = cand(aid)
                c.ranks["signals"] = rank
                c.signal_terms = sig_details[aid].bm25_terms
        # What the run did, logged ("loss is nan from step 120") or stated in words ("grad =
        # nan"; a weaker vote): only articles that say nearly as much as the best one count.
        for channel, facts in (("anomalies", context.anomalies), ("stated", context.stated)):
            if facts:
                order, _ = self.bm25_articles(
                    "\n".join(facts), SIGNAL_SECTIONS, ANOMALY_RELATIVE_FLOOR
                )
                for rank, aid in enumerate(order[:DENSE_CANDIDATES], 1):
                    cand(aid).ranks[channel] = rank

        # A case about the report's stage, not one that merely lists it among many ("any" stage):
        # otherwise every broad case gains as much as the one written for that stage.
        ctx_articles = [
            a.id
            for a in self.index.articles.values()
            if (context.stage and context.stage in a.stages and a.id in self._stage_cases)
            or (context.framework and context.framework in a.frameworks)
        ]
        for aid in ctx_articles:
            if aid in cands:
                cands[aid].ranks["context"] = 1
        observed = _observed_values(text, context)
        text_only = not mentions_vision(text)
        named = families_named(text)
        launchers = launchers_named(text)
        tools = tools_named(text)
        for aid, c in cands.items():
            c.contradicts = _contradiction(self._claims.get(aid, {}), observed)
            # A case for other models than the report's, unless its own error string matched
            # (the report may simply not name the model).
            if not c.contradicts and not c.signatures:
                c.contradicts = self._model_mismatch(aid, text_only, named) or (
                    self._launcher_mismatch(aid, launchers)
                )
                # Nor does a report that never names the tool a case's title is about ("Unsloth
                # on T4 / V100 ..." for a nanoGPT run on a V100).
                own_tools = self._title_tools.get(aid, frozenset())
                c.family_unconfirmed = (not named and bool(self._families.get(aid))) or bool(
                    own_tools and not own_tools & tools
                )
            # A matched metric line ("'loss': 0.0, 'grad_norm': nan") is what the run did, not
            # which precision it ran in: only an error string overrides the stated precision.
            if not c.contradicts and all(_METRIC_LINE.search(sig) for sig in c.signatures):
                c.contradicts = self._precision_mismatch(aid, context.precision)
        if context.hinted_modes:
            hinted = [
                a
                for a in cands
                if a in self.index.articles
                and self.index.articles[a].failure_mode in context.hinted_modes
                and not cands[a].contradicts
            ]
            # Ranked among themselves by how well they match the text.
            hinted.sort(
                key=lambda a: min(cands[a].ranks.get("bm25", 999), cands[a].ranks.get("dense", 999))
            )
            for rank, aid in enumerate(hinted, 1):
                cands[aid].ranks["hint"] = rank
        return cands

    def _model_mismatch(self, aid: str, text_only: bool, named: frozenset[str]) -> str:
        """Why a case cannot be about the report's model: a vision-language case for a report
        with no image, vision or VLM word, or a case limited to other families than it names."""
        if text_only and aid in self._vision_only:
            return "no image or vision-language model in the report"
        return _names_only_others(named, self._families.get(aid))

    def _precision_mismatch(self, aid: str, precision: str | None) -> str:
        """Why an fp16-only case cannot be about a run that trains in bf16."""
        article = self.index.articles.get(aid)
        if precision == "bf16" and article and article.failure_mode in FP16_ONLY_MODES:
            return "the run trains in bf16; this happens only in fp16"
        return ""

    def _launcher_mismatch(self, aid: str, launchers: frozenset[str]) -> str:
        """Why a case for one framework's own script cannot be about the report's launcher."""
        return _names_only_others(launchers, self._launchers.get(aid))

    def rank(self, cands: dict[str, _Candidate], k: int, context: QueryContext) -> list[Hit]:
        known = {aid: c for aid, c in cands.items() if aid in self.index.articles}
        scored = order_by_mode(
            score_candidates(known), lambda aid: self.index.articles[aid].failure_mode
        )
        hits = []
        for rank, (fused, aid, c) in enumerate(scored[:k], 1):
            evidence = _evidence(c, context, self.index.articles[aid])
            hits.append(
                Hit(
                    article=self.index.articles[aid],
                    score=fused,
                    rank=rank,
                    confidence=_confidence(c),
                    evidence=[en for en, _ in evidence],
                    signatures=list(c.signatures),
                    evidence_zh=[zh for _, zh in evidence],
                )
            )
        return hits


def _stage_specific(stages: list[str]) -> bool:
    """A case written for one or two training stages, not for any."""
    return "any" not in stages and len(stages) <= STAGE_SPECIFIC_MAX


def _names_only_others(named: frozenset[str], limited_to: frozenset[str] | None) -> str:
    """'the report is about qwen, this case about glm' when the report names some of a kind
    (model families, launchers) and none of those the case is limited to; "" otherwise."""
    if named and limited_to and not limited_to & named:
        return (
            f"the report is about {'/'.join(sorted(named))}, this case about "
            f"{'/'.join(sorted(limited_to))}"
        )
    return ""


def fused_score(
    ranks: dict[str, int],
    contradicted: bool,
    weights: dict[str, float] = WEIGHTS,
    rrf_k: float = RRF_K,
    contradicted_share: float = CONTRADICTED_SHARE,
) -> float:
    """Weighted reciprocal-rank fusion of one article's channel ranks (the knobs are for
    scripts/tune_fusion.py; search uses the defaults)."""
    score = sum(weights[name] / (rrf_k + r) for name, r in ranks.items())
    return score * contradicted_share if contradicted else score


def score_candidates(
    cands: dict[str, _Candidate],
    weights: dict[str, float] = WEIGHTS,
    rrf_k: float = RRF_K,
    contradicted_share: float = CONTRADICTED_SHARE,
) -> list[tuple[float, str, _Candidate]]:
    """(fused score, article id, candidate) best first, ties by id; a case whose model family
    the report never names weighs UNNAMED_FAMILY_SHARE."""
    scored = []
    for aid, c in cands.items():
        fused = fused_score(c.ranks, bool(c.contradicts), weights, rrf_k, contradicted_share)
        scored.append((fused * UNNAMED_FAMILY_SHARE if c.family_unconfirmed else fused, aid, c))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return scored


def _metric_claims(article: Article) -> dict[str, set[str]]:
    """Telling metric values a case names where it says what the user sees (title, symptoms,
    signatures): {"grad_norm": {"nan"}} for an fp16-overflow case."""
    return _metric_values([article.title, *article.symptoms, *article.error_signatures])


def _observed_values(text: str, context: QueryContext) -> dict[str, set[str]]:
    return _metric_values([text, *context.anomalies, *context.stated])


def _metric_values(texts: list[str]) -> dict[str, set[str]]:
    values: dict[str, set[str]] = {}
    for text in texts:
        for metric, value in metric_statements(text):
            values.setdefault(metric, set()).add(value)
    return values


def _contradiction(claims: dict[str, set[str]], observed: dict[str, set[str]]) -> str:
    """'grad_norm=0' when the run shows only that value and the case names only others."""
    for metric in CONTRADICTION_METRICS:
        values = observed.get(metric, set())
        claimed = claims.get(metric, set())
        if len(values) == 1 and claimed and not values & claimed:
            return f"{metric}={next(iter(values))}"
    return ""


def order_by_mode(
    scored: list,
    mode_of: Callable[[str], str],
    share: float = MODE_SUPPORT_SHARE,
    depth: int = MODE_SUPPORT_DEPTH,
    gate: float = MODE_SUPPORT_GATE,
) -> list:
    """Best article of each failure mode first, modes in order of their support, then the
    runners-up of modes already shown.

    Three articles of one mode tell the user one thing; distinct plausible causes, in order,
    are what a person needs when the report fits more than one. A mode's support is its best
    article's score plus a small share of each other article of that mode near the top:
    several distinct cases of one mode that all fit ("ImportError ... cannot import name" from
    three version-mismatch cases) make that mode likelier than one case of another that fits a
    little better (within MODE_SUPPORT_GATE of the top score). An exact error string of the best
    article keeps its mode first. `scored` holds (score, article id, candidate) best first;
    share, depth and gate are parameters so that scripts/tune_fusion.py can measure others.
    """
    support: dict[str, float] = {}
    best: dict[str, tuple] = {}
    later = []
    top_score = scored[0][0] if scored else 0.0
    for position, item in enumerate(scored):
        mode = mode_of(item[1])
        if mode not in best:
            best[mode] = item
            support[mode] = item[0]
            continue
        later.append(item)
        if position < depth and best[mode][0] >= gate * top_score:
            support[mode] += share * item[0]
    modes = sorted(best, key=lambda m: -support[m])  # stable: ties keep the score order
    if scored and scored[0][2].signatures:
        lead = mode_of(scored[0][1])
        modes = [lead] + [m for m in modes if m != lead]
    return [best[m] for m in modes] + later


def _dedupe(items) -> list[str]:
    return list(dict.fromkeys(items))


def _confidence(c: _Candidate) -> float:
    """0..1 from absolute signals, so one threshold works across queries.

    A matched error signature is near-certain; otherwise the better of the dense cosine (placed
    between the corpus floor and ceiling) and the share of the query's BM25 mass the article holds.
    """
    if c.signatures:
        return 0.97
    dense = (c.dense_cos - DENSE_FLOOR) / (DENSE_CEIL - DENSE_FLOOR)
    lexical = math.sqrt(max(c.bm25_frac, 0.0))
    value = 0.6 * max(dense, 0.0) + 0.4 * lexical
    if "signals" in c.ranks and c.ranks["signals"] <= 3:
        value += 0.1
    # The report itself points to this case's mode ("works after downgrading", a DPO run at 1e-4):
    # a metrics-only log has little text to match, so that pointer counts as evidence too.
    if "hint" in c.ranks:
        value += HINT_CONFIDENCE
    return float(min(max(value, 0.0), 0.95))


# Section names as a Chinese answer shows them next to the shared terms.
SECTION_ZH = {
    "summary": "标题和症状",
    "signatures": "报错特征和触发条件",
    "Symptoms": "症状",
    "Cause": "原因",
    "Fix": "解决方法",
    "How to confirm": "如何确认",
    "Why": "原理",
}


def _names_version(pkg: str, version: str, article: Article) -> bool:
    """Whether the case names this library at this major.minor version: the package word alone
    matches every case about that library, and "your transformers 4.31.0" shown as evidence for
    a case about 4.43 reads as if the versions agreed. A version without major.minor is not
    judged (True)."""
    m = re.match(r"v?(\d+)\.(\d+)", version)
    if not m:
        return True
    said = "\n".join(
        [
            article.title,
            article.cause,
            *article.error_signatures,
            *article.conditions,
            *article.symptoms,
            *article.fix,
            *(f"{name} {v}" for name, v in article.verified_with.items()),
        ]
    ).lower()
    major, minor = m.groups()
    return pkg in said and re.search(rf"(?<![\d.]){major}\.{minor}(?!\d)", said) is not None


def _evidence(c: _Candidate, context: QueryContext, article: Article) -> list[tuple[str, str]]:
    """Why a case matched, as (English, Chinese) pairs built from the same facts."""
    out = []
    for sig in c.signatures[:2]:
        shown = (sig[3:] if sig.startswith("re:") else sig)[:120]
        out.append(
            (
                f"error text matches the known signature “{shown}”",
                f"报错文本与已知报错特征一致：“{shown}”",
            )
        )
    if c.signal_terms and context.phrases:
        # The phrases that are the log's library versions ("transformers 4.31.0").
        versions = {f"{pkg} {v}": (pkg, v) for pkg, v in context.versions}
        related = [
            p
            for p in context.phrases
            if any(t in tokenize(p) for t in c.signal_terms)
            and (p not in versions or _names_version(*versions[p], article))
        ]
        for phrase in related[:3]:
            out.append((f"from your log: {phrase}", f"来自你的日志：{phrase}"))
    # Single CJK characters say little; bigrams read as the words they came from.
    terms = join_cjk_bigrams([t for t in c.bm25_terms if len(t) > 1])
    if terms:
        shared = ", ".join(terms[:6])
        zh_section = SECTION_ZH.get(c.bm25_section, c.bm25_section)
        out.append(
            (f"shared terms in {c.bm25_section}: {shared}", f"与{zh_section}共有的词：{shared}")
        )
    if "hint" in c.ranks:
        out.append(
            (
                "your report itself points to this kind of failure",
                "你的日志或描述本身就指向这一类问题",
            )
        )
    if c.dense_cos:
        zh_section = SECTION_ZH.get(c.dense_section, c.dense_section)
        out.append(
            (
                f"similar in meaning to its {c.dense_section} (cosine {c.dense_cos:.2f})",
                f"语义上接近它的{zh_section}（余弦相似度 {c.dense_cos:.2f}）",
            )
        )
    return out
