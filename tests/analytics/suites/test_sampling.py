"""Samplers and realism scorers on constructed contexts (no workspace: the logic only)."""

from __future__ import annotations

import numpy as np
import pytest

from analytics.exceptions import InvalidInputError
from analytics.suites import SAMPLERS
from analytics.suites.sampling import REALISM_SCORERS, KeywordSampler, OntologySampler, RankedKeyword, SamplingContext, SeamHarmony

N_TARGETS, N_POOL = 5, 40
TARGETS = [f"t{i}" for i in range(N_TARGETS)]
POOL = [f"b{j:02d}" for j in range(N_POOL)]
WORDS = ["sky", "tree", "grass", "sea"]


def full_context(**changes) -> SamplingContext:
    """Uniform random proxies; every target detects 'sky' and expands to tree, grass (level 1) and
    sea (level 2); backgrounds carry keywords round-robin (10 per keyword)."""
    rng = np.random.default_rng(1)
    keywords = [[RankedKeyword("sky", 0, 0.9), RankedKeyword("tree", 1, 0.6), RankedKeyword("grass", 1, 0.4), RankedKeyword("sea", 2, 0.2)]] * N_TARGETS
    carriers = {word: np.arange(k, N_POOL, len(WORDS)) for k, word in enumerate(WORDS)}
    values = dict(proxy_distances=rng.random((N_TARGETS, N_POOL)), target_keywords=keywords, background_keywords=carriers)
    values.update(changes)
    return SamplingContext(**values)


def by_target(result) -> dict[str, list]:
    grouped: dict[str, list] = {}
    for item in result.items:
        grouped.setdefault(item.target_id, []).append(item)
    return grouped


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_same_seed_same_result_and_no_duplicates(name):
    sampler = SAMPLERS[name]()
    first = sampler.sample(TARGETS, POOL, n=8, seed=3, context=full_context())
    again = sampler.sample(TARGETS, POOL, n=8, seed=3, context=full_context())
    assert first == again
    for target_id, items in by_target(first).items():
        backgrounds = [item.background_id for item in items]
        assert len(backgrounds) == len(set(backgrounds)) == 8
        assert [item.position for item in items] == list(range(1, 9))


@pytest.mark.parametrize("name", ["random", "interval", "keyword", "ontology"])
def test_seed_changes_the_choice(name):
    sampler = SAMPLERS[name]()
    first = sampler.sample(TARGETS, POOL, n=8, seed=0, context=full_context())
    other = sampler.sample(TARGETS, POOL, n=8, seed=1, context=full_context())
    assert [i.background_id for i in first.items] != [i.background_id for i in other.items]


def test_a_target_does_not_depend_on_the_others():
    sampler = SAMPLERS["random"]()
    alone = sampler.sample(TARGETS[2:3], POOL, n=6, seed=0, context=full_context())
    together = sampler.sample(TARGETS, POOL, n=6, seed=0, context=full_context())
    assert [i.background_id for i in alone.items] == [i.background_id for i in by_target(together)["t2"]]


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_pool_smaller_than_n_is_an_error(name):
    with pytest.raises(InvalidInputError, match="exceeds the pool of 40"):
        SAMPLERS[name]().sample(TARGETS, POOL, n=41, seed=0, context=full_context())


@pytest.mark.parametrize(("name", "missing", "message"), [
    ("nearest", {"proxy_distances": None}, "proxy_distances"),
    ("interval", {"proxy_distances": np.zeros((2, 2))}, "shape"),
    ("keyword", {"target_keywords": None}, "target_keywords"),
    ("ontology", {"background_keywords": None}, "background_keywords"),
])  # fmt: skip
def test_missing_context_is_an_error(name, missing, message):
    with pytest.raises(InvalidInputError, match=message):
        SAMPLERS[name]().sample(TARGETS, POOL, n=4, seed=0, context=full_context(**missing))


def test_bad_arguments_are_errors():
    sampler = SAMPLERS["random"]()
    with pytest.raises(InvalidInputError, match="n must be"):
        sampler.sample(TARGETS, POOL, n=0, seed=0, context=full_context())
    with pytest.raises(InvalidInputError, match="seed must be"):
        sampler.sample(TARGETS, POOL, n=2, seed=-1, context=full_context())
    with pytest.raises(InvalidInputError, match="pool_ids must be unique"):
        sampler.sample(TARGETS, POOL + POOL[:1], n=2, seed=0, context=full_context())


def test_nearest_takes_the_n_smallest_proxies_in_order():
    context = full_context()
    result = SAMPLERS["nearest"]().sample(TARGETS, POOL, n=5, seed=0, context=context)
    for i, (target_id, items) in enumerate(by_target(result).items()):
        expected = [POOL[j] for j in np.argsort(context.proxy_distances[i])[:5]]
        assert [item.background_id for item in items] == expected
        assert [item.distance_proxy for item in items] == sorted(item.distance_proxy for item in items)


def test_interval_takes_one_background_per_bin():
    n = 8
    distances = np.tile(np.linspace(0.0, 1.0, N_POOL), (N_TARGETS, 1))  # 5 pool members per bin
    result = SAMPLERS["interval"]().sample(TARGETS, POOL, n=n, seed=0, context=full_context(proxy_distances=distances))
    for items in by_target(result).values():
        bins = np.minimum((np.array([item.distance_proxy for item in items]) * n).astype(int), n - 1)
        assert sorted(bins) == list(range(n))


def bimodal_distances(seed: int = 0, n_targets: int = 20, n_pool: int = 100) -> np.ndarray:
    """Per target: 40 % of the pool near 0.1, 40 % near 0.9, 20 % spread in between."""
    rng = np.random.default_rng(seed)
    near = rng.normal(0.1, 0.02, (n_targets, int(0.4 * n_pool)))
    far = rng.normal(0.9, 0.02, (n_targets, int(0.4 * n_pool)))
    middle = rng.uniform(0.15, 0.85, (n_targets, n_pool - near.shape[1] - far.shape[1]))
    return np.concatenate([near, far, middle], axis=1)


def test_distance_orderings_on_a_bimodal_pool():
    """nearest has the smallest mean distance; random the largest spread (std) versus interval.

    On a pool whose distances crowd at both ends, random draws mostly extremes (std near half the
    range) while interval takes one per equal-width bin (std near range / sqrt(12)).
    """
    distances = bimodal_distances()
    targets, pool = [f"t{i}" for i in range(len(distances))], [f"b{j}" for j in range(distances.shape[1])]
    context = SamplingContext(proxy_distances=distances)
    picked = {
        name: np.array([i.distance_proxy for i in SAMPLERS[name]().sample(targets, pool, n=16, seed=0, context=context).items])
        for name in ("random", "nearest", "interval")
    }
    means = {name: values.mean() for name, values in picked.items()}
    assert means["nearest"] < means["interval"] and means["nearest"] < means["random"]
    assert picked["random"].std() > picked["interval"].std() > picked["nearest"].std()


def test_keyword_uses_detected_keywords_only_and_cycles():
    context = full_context()
    result = KeywordSampler(top_up=False).sample(TARGETS, POOL, n=6, seed=0, context=context)
    for items in by_target(result).values():
        assert {item.keyword for item in items} == {"sky"} and {item.level for item in items} == {0}
        assert all(int(item.background_id[1:]) in context.background_keywords["sky"] for item in items)


def test_ontology_cycles_through_keywords_ranked_by_level_then_weight():
    result = OntologySampler().sample(TARGETS, POOL, n=8, seed=0, context=full_context())
    for items in by_target(result).values():
        assert [item.keyword for item in items] == ["sky", "tree", "grass", "sea"] * 2
        assert [item.level for item in items] == [0, 1, 1, 2] * 2


def test_ontology_suites_are_more_diverse_than_detected_keyword_suites():
    context = full_context()
    diversity = {}
    for cls in (KeywordSampler, OntologySampler):
        grouped = by_target(cls().sample(TARGETS, POOL, n=8, seed=0, context=context))
        diversity[cls.name] = np.mean([len({i.keyword for i in items if i.keyword}) for items in grouped.values()])
    assert diversity["ontology"] > diversity["keyword"]


def test_exhausted_keywords_shrink_or_top_up_with_a_warning():
    few = {word: np.array([k]) for k, word in enumerate(WORDS)}  # one carrier per keyword
    context = full_context(background_keywords=few)
    short = KeywordSampler(top_up=False).sample(TARGETS, POOL, n=6, seed=0, context=context)
    assert all(len(items) == 1 for items in by_target(short).values())
    assert len(short.warnings) == N_TARGETS and "1 of 6" in short.warnings[0]
    topped = KeywordSampler().sample(TARGETS, POOL, n=6, seed=0, context=context)
    for items in by_target(topped).values():
        assert len(items) == 6 and [i.level for i in items] == [0] + [-1] * 5
        assert len({i.background_id for i in items}) == 6
    assert "topped the suite up" in topped.warnings[0]


def test_a_target_without_keywords_is_topped_up():
    keywords = [[]] + [[RankedKeyword("sky", 0, 1.0)]] * (N_TARGETS - 1)
    result = KeywordSampler().sample(TARGETS, POOL, n=3, seed=0, context=full_context(target_keywords=keywords))
    assert [i.level for i in by_target(result)["t0"]] == [-1, -1, -1]
    assert any("'t0'" in warning for warning in result.warnings)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_realism_threshold_is_respected(name):
    scores = np.random.default_rng(5).random((N_TARGETS, N_POOL))
    calls = []

    def realism(i, j):
        calls.append((i, j))
        return scores[i, j]

    result = SAMPLERS[name]().sample(TARGETS, POOL, n=6, seed=0, context=full_context(realism=realism, realism_threshold=0.7))
    assert calls, "the scorer was never asked"
    for item in result.items:
        assert scores[TARGETS.index(item.target_id), POOL.index(item.background_id)] >= 0.7


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_too_strict_realism_fills_the_suite_with_the_best_rejected_and_warns(name):
    # backgrounds 0-2 pass; every other one fails, background j scoring j / 100
    context = full_context(realism=lambda i, j: 1.0 if j < 3 else j / 100, realism_threshold=0.5)
    result = SAMPLERS[name]().sample(TARGETS, POOL, n=5, seed=0, context=context)
    for items in by_target(result).values():
        passing = [item.background_id for item in items if not item.below_realism]
        below = [item.background_id for item in items if item.below_realism]
        assert len(items) == 5 and len({item.background_id for item in items}) == 5
        assert sorted(passing) == ["b00", "b01", "b02"]
        assert [item.position for item in items if item.below_realism] == [4, 5]  # after every passing one
        scores = [int(b[1:]) / 100 for b in below]
        assert all(score < 0.5 for score in scores) and scores == sorted(scores, reverse=True)  # best first
    realism_notes = [w for w in result.warnings if "realism" in w]
    assert len(realism_notes) == N_TARGETS and "3 of 5" in realism_notes[0] and "below_realism" in realism_notes[0]


def test_the_filling_backgrounds_are_the_best_scoring_rejected_ones():
    context = full_context(realism=lambda i, j: 1.0 if j < 3 else j / 100, realism_threshold=0.5)
    grouped = by_target(SAMPLERS["random"]().sample(TARGETS, POOL, n=5, seed=0, context=context))
    for items in grouped.values():  # random tries the whole pool, so the two best rejected are 39 and 38
        assert [item.background_id for item in items if item.below_realism] == ["b39", "b38"]


def test_a_background_as_harmonious_as_the_own_scene_passes_a_stricter_threshold():
    # every candidate scores 0.3 < 0.5, but target 0's own scene scores only 0.2: its bar drops to 0.2
    context = full_context(realism=lambda i, j: 0.3, realism_threshold=0.5, realism_reference=lambda i: 0.2 if i == 0 else 0.9)
    grouped = by_target(SAMPLERS["random"]().sample(TARGETS, POOL, n=4, seed=0, context=context))
    assert not any(item.below_realism for item in grouped["t0"])
    assert all(item.below_realism for target in TARGETS[1:] for item in grouped[target])


# -- realism scorers --------------------------------------------------------------------------
def object_on(colour: int, background: int, *, size: int = 32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    image = np.full((1, size, size, 3), background, np.uint8)
    mask = np.zeros((1, size, size), bool)
    mask[0, 8:24, 8:24] = True
    image[mask] = colour
    return image, mask, np.full_like(image, background)


def test_seam_harmony_scores_matching_scenes_high_and_clashing_ones_low():
    scorer = SeamHarmony()
    image, mask, _ = object_on(200, 200)
    assert scorer.score(image, mask, np.full_like(image, 200))[0] == pytest.approx(1.0)
    dark, mask, black = object_on(255, 0)
    assert scorer.score(dark, mask, black)[0] == 0.0  # white object on black: L jumps by 100
    grey = scorer.score(dark, mask, np.full_like(dark, 180))[0]
    assert 0.0 < grey < 1.0


def test_seam_harmony_checks_its_inputs():
    image, mask, background = object_on(100, 50)
    scores = SeamHarmony(band=2).score(np.repeat(image, 3, 0), np.repeat(mask, 3, 0), np.repeat(background, 3, 0))
    assert scores.shape == (3,) and ((0 <= scores) & (scores <= 1)).all()
    with pytest.raises(InvalidInputError, match="backgrounds must have"):
        SeamHarmony().score(image, mask, background[:, :16])
    with pytest.raises(InvalidInputError, match="band"):
        SeamHarmony(band=0)
    assert set(REALISM_SCORERS) == {"seam-harmony"}


def test_a_target_prepared_once_scores_every_background_as_the_batch_call_does():
    """Issue 28.5: the target's band, ring and Lab moments are computed once per target; the
    scores are exactly those of :meth:`SeamHarmony.score`, also for a mask without a seam."""
    rng = np.random.default_rng(3)
    image, mask, _ = object_on(120, 60)
    image = np.clip(image + rng.integers(-20, 20, image.shape), 0, 255).astype(np.uint8)
    backgrounds = rng.integers(0, 255, (5, 32, 32, 3), dtype=np.uint8)
    scorer = SeamHarmony()
    scored = scorer.for_target(image[0], mask[0])
    assert [scored(b) for b in backgrounds] == scorer.score(np.repeat(image, 5, 0), np.repeat(mask, 5, 0), backgrounds).tolist()
    assert scorer.for_target(image[0], np.zeros((32, 32), bool))(backgrounds[0]) == 1.0
    with pytest.raises(InvalidInputError, match="target's shape"):
        scored(backgrounds[0, :16])


def test_keyword_subspaces_share_backgrounds_yet_each_keyword_gets_its_own():
    """Issue 18.4: one background per distinct keyword wherever the pool allows. 'sky' is carried by
    b00-b03, and each of tree, grass, sea only by one of b00-b02: cycling greedily, sky's random
    first pick takes the only background of a later keyword 3 times in 4. With 4 backgrounds per
    target every target must get its 4 keywords (sky on b03)."""
    keywords = [[RankedKeyword("sky", 0, 0.9), RankedKeyword("tree", 1, 0.6), RankedKeyword("grass", 1, 0.4), RankedKeyword("sea", 2, 0.2)]]
    carriers = {"sky": np.array([0, 1, 2, 3]), "tree": np.array([0]), "grass": np.array([1]), "sea": np.array([2])}
    targets = [f"t{i}" for i in range(8)]
    context = SamplingContext(target_keywords=keywords * len(targets), background_keywords=carriers)
    result = OntologySampler().sample(targets, POOL, n=4, seed=0, context=context)
    for items in by_target(result).values():
        assert [item.keyword for item in items] == ["sky", "tree", "grass", "sea"]  # rank order, no top-up
        assert {item.keyword: item.background_id for item in items} == {"sky": "b03", "tree": "b00", "grass": "b01", "sea": "b02"}
    assert not result.warnings


def test_distinct_keywords_come_before_a_second_background_of_any_keyword():
    """With fewer keywords than backgrounds, every keyword is used once before any is used twice,
    and the best-ranked keywords are the ones kept when n is smaller than the keyword count."""
    result = OntologySampler().sample(TARGETS, POOL, n=6, seed=0, context=full_context())
    for items in by_target(result).values():
        assert [item.keyword for item in items[:4]] == WORDS
    short = OntologySampler().sample(TARGETS, POOL, n=2, seed=0, context=full_context())
    assert {tuple(item.keyword for item in items) for items in by_target(short).values()} == {("sky", "tree")}
