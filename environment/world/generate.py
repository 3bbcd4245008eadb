"""The world generator: one fixed seed in, the whole Ostrelle world out.

The recipe, in the order it runs:

1. the supplier market: 40 vendors over ten countries in four tiers;
2. the designs: 133 garment designs (111 listed lines, 22 unlisted on the market),
   each with a size run and colours, a reference price, a hidden popularity and
   price elasticity; primary sources, second sources for about a third of the
   listed lines, and supply SKUs for every design and source;
3. 18 months of history: exactly 3,320 orders placed by a seasonal, diurnal
   intensity, customers drawn by a rich-get-richer process (so most buy once and
   a few come back often), fulfilment, settlement, and returns driven by fit and
   by defects that follow the vendor's defect rate;
4. purchase orders that explain every unit sold and every unit on the shelf, and
   the opening work in progress at 2026-08-01 00:00: unshipped orders, open
   returns, purchase orders in transit and unsettled receivables.

Every draw comes from a :class:`~environment.rand.Stream` keyed by purpose, so a
change to one step does not reshuffle the others.
"""

from __future__ import annotations

from ..rand import Stream
from . import vocab
from .history import History, VariantRow
from .model import Product, Season, SupplyProduct, SupplyRole, SupplySku, Tier, Vendor, World
from .params import (
    CURRENT_DAILY_ORDERS,
    FITS,
    HISTORY_START,
    LISTED_LINES,
    SETTLEMENT_DAYS,
    SHIFT_START,
    TARGET_VARIANTS,
    UNLISTED_DESIGNS,
    WORLD_SEED,
    rng,
)


def _round_price(dollars: float) -> int:
    """Shelf prices end in .00 or .50 below 40 dollars and in whole dollars above."""
    if dollars < 40:
        return int(round(dollars * 2)) * 50
    return int(round(dollars)) * 100


def generate() -> World:
    vendors = _vendors()
    designs = _designs()
    listed, unlisted = designs[:LISTED_LINES], designs[LISTED_LINES:]
    _fit_variant_total(listed)
    supply_products, supply_skus, products, variants_by_product = _catalog(listed, unlisted, vendors)
    history = History(products, variants_by_product, supply_products, supply_skus, vendors)
    history.run()
    variants = tuple(v for p in products for v in history.final_variants[p.id])
    return World(
        world_seed=WORLD_SEED,
        history_start=HISTORY_START,
        shift_start=SHIFT_START,
        settlement_days=SETTLEMENT_DAYS,
        vendors=tuple(vendors),
        supply_products=tuple(supply_products),
        supply_skus=tuple(supply_skus),
        products=tuple(products),
        variants=variants,
        customers=tuple(history.customers),
        orders=tuple(history.orders),
        returns=tuple(history.returns),
        purchase_orders=tuple(history.purchase_orders),
    )


# --- 1. vendors -------------------------------------------------------------


def _vendors() -> list[Vendor]:
    r = rng("vendors")
    words = list(vocab.VENDOR_WORDS_A)
    r.shuffle(words)
    vendors = []
    n = 0
    for country, (count, cities) in vocab.COUNTRIES.items():
        tiers = vocab.COUNTRY_TIERS[country]
        for i in range(count):
            n += 1
            tier = tiers[i % len(tiers)]
            terms = vocab.TIER_TERMS[tier]
            city = cities[i % len(cities)]
            word = words[(n * 7) % len(words)]
            suffix = vocab.VENDOR_WORDS_B[r.next64() % len(vocab.VENDOR_WORDS_B)]
            if country == "Portugal" and r.chance(0.6):
                suffix = "Confeccoes"
            elif suffix == "Confeccoes":
                suffix = "Garments"
            vendors.append(Vendor(
                id=f"VND-{n:02d}",
                name=f"{city} {word} {suffix}",
                country=country,
                city=city,
                tier=Tier(tier),
                lead_days=r.randint(*terms["lead"]),
                moq=max(3, int(round(r.randint(*terms["moq"]) / 3.0)) * 3),
                defect_rate=round(r.uniform(*terms["defect"]), 4),
                on_time_rate=round(r.uniform(*terms["on_time"]), 3),
                founded=r.randint(1978, 2016),
            ))
    return vendors


# --- 2. designs and catalog ---------------------------------------------------


# A row of vocab.GARMENTS: garment, category, season, size run, price range, materials, colour range.
_Template = tuple[str, str, str, tuple[str, ...], tuple[int, int], tuple[str, ...], tuple[int, int]]


class _Design:
    """A garment design before it becomes a listed line or a market offer."""

    __slots__ = ("garment", "category", "season", "sizes", "material", "fit", "key", "title",
                 "ref_price", "colours", "colour_range", "popularity", "elasticity")

    def __init__(self, template: _Template, material: str, fit: str) -> None:
        garment, category, season, sizes, _price, _materials, colour_range = template
        self.garment = garment
        self.category = category
        self.season = season
        self.sizes = sizes
        self.material = material
        self.fit = fit
        # The key names the design's random streams and its order, as it always has; the
        # title a shopper reads drops a material word the garment's name repeats
        # ("Cotton Oxford" + "Oxford Shirt" is a "Cotton Oxford Shirt").
        self.key = " ".join(part for part in (fit, material, garment) if part)
        garment_words = set(garment.split())
        material_words = [w for w in material.split() if w not in garment_words]
        self.title = " ".join(part for part in (fit, *material_words, garment) if part)
        self.colour_range = colour_range
        self.colours: list[str] = []
        self.ref_price = 0
        self.popularity = 0.0
        self.elasticity = 0.0

    @property
    def variant_count(self) -> int:
        return len(self.sizes) * len(self.colours)


def _designs() -> list[_Design]:
    r = rng("designs")
    order = list(vocab.GARMENTS)
    r.shuffle(order)
    taken: set[str] = set()
    designs: list[_Design] = []
    want = LISTED_LINES + UNLISTED_DESIGNS
    round_no = 0
    while len(designs) < want:
        for template in order:
            if len(designs) >= want:
                break
            materials = template[5]
            for _attempt in range(12):
                fit = "" if round_no == 0 else r.choice(FITS[1:])
                design = _Design(template, r.choice(materials), fit)
                if design.key not in taken:
                    taken.add(design.key)
                    designs.append(design)
                    break
        round_no += 1
    for d in designs:
        dr = rng("design", d.key)
        low, high = vocab.GARMENTS[[g[0] for g in vocab.GARMENTS].index(d.garment)][4]
        d.ref_price = _round_price(dr.uniform(low, high))
        n_col = dr.randint(*d.colour_range)
        palette = list(vocab.CORE_COLOURS) + [c for c, _ in vocab.COLOURS if c not in vocab.CORE_COLOURS]
        weights = [3.0 if c in vocab.CORE_COLOURS else 1.0 for c in palette]
        chosen: list[str] = []
        while len(chosen) < n_col:
            c = dr.weighted_choice(palette, weights)
            if c not in chosen:
                chosen.append(c)
        d.colours = chosen
        d.popularity = dr.lognormal(0.0, 1.25)
        d.elasticity = round(dr.uniform(1.4, 2.6), 3)
    # Listed lines are the more popular designs on the whole; shuffle mildly so the
    # market still holds a few strong designs an operator could list.
    designs.sort(key=lambda d: -d.popularity * rng("rank", d.key).uniform(0.55, 1.0))
    return designs


def _fit_variant_total(listed: list[_Design]) -> None:
    """Add or drop colours, deterministically, until the listed grid is exactly 3,448."""
    palette = [c for c, _ in vocab.COLOURS]
    total = sum(d.variant_count for d in listed)
    guard = 0
    while total != TARGET_VARIANTS and guard < 10_000:
        guard += 1
        diff = TARGET_VARIANTS - total
        step_designs = sorted(listed, key=lambda d: (-len(d.sizes), d.key))
        progressed = False
        for d in step_designs:
            size = len(d.sizes)
            if diff > 0 and size <= diff and len(d.colours) < 10:
                extra = next(c for c in palette if c not in d.colours)
                d.colours.append(extra)
                total += size
                progressed = True
                break
            if diff < 0 and size <= -diff and len(d.colours) > 2:
                d.colours.pop()
                total -= size
                progressed = True
                break
        if not progressed:
            # Only a remainder smaller than every run length is left: trade a colour on a
            # long run for colours on a short run.
            d = next(x for x in step_designs if len(x.colours) > 2 and len(x.sizes) > 1)
            d.colours.pop()
            total -= len(d.sizes)
    if total != TARGET_VARIANTS:
        raise RuntimeError(f"cannot fit the catalog to {TARGET_VARIANTS} variants (got {total})")


def _pick_vendor(r: Stream, vendors: list[Vendor], category: str, avoid: set[str]) -> Vendor:
    origins = vocab.CATEGORY_ORIGINS[category]
    countries = sorted(origins)
    country = r.weighted_choice(countries, [origins[c] for c in countries])
    pool = [v for v in vendors if v.country == country and v.id not in avoid]
    if not pool:
        pool = [v for v in vendors if v.id not in avoid]
    return r.choice(pool)


def size_weight(size: str, sizes: tuple[str, ...]) -> float:
    """The standard size curve: a size's share of its run's demand (public, used to split orders)."""
    if sizes == vocab.SHOE:
        return vocab.SHOE_WEIGHTS[size]
    if sizes == vocab.ALPHA3:
        return {"S": 0.3, "M": 0.4, "L": 0.3}[size]
    return vocab.SIZE_WEIGHTS[size]


def _unit_cost(ref_price: int, vendor: Vendor, size: str, r: Stream) -> int:
    low, high = vocab.TIER_TERMS[vendor.tier]["cost"]
    share = r.uniform(low, high)
    premium = 1.06 if size in ("XXL", "38", "44", "45") else 1.0
    return max(100, int(round(ref_price * share * premium)))


def _catalog(listed: list[_Design], unlisted: list[_Design], vendors: list[Vendor]
             ) -> tuple[list[SupplyProduct], list[SupplySku], list[Product], dict[str, list[VariantRow]]]:
    supply_products: list[SupplyProduct] = []
    supply_skus: list[SupplySku] = []
    products: list[Product] = []
    variants_by_product: dict[str, list[VariantRow]] = {}
    total_pop = sum(d.popularity for d in listed)
    scale = CURRENT_DAILY_ORDERS / total_pop
    sp_no = 0

    def add_supply(design: _Design, vendor: Vendor, role: SupplyRole, product_id: str | None,
                   variant_ids: dict[tuple[str, str], str] | None) -> SupplyProduct:
        nonlocal sp_no
        sp_no += 1
        sp_id = f"SP-{sp_no:04d}"
        r = rng("supply", sp_id)
        sku_ids = []
        for size in design.sizes:
            for colour in design.colours:
                sku_id = f"{sp_id}-{size}-{vocab.COLOUR_CODE[colour]}"
                sku_ids.append(sku_id)
                supply_skus.append(SupplySku(
                    id=sku_id,
                    supply_product_id=sp_id,
                    size=size,
                    colour=colour,
                    unit_cost=_unit_cost(design.ref_price, vendor, size, r),
                    variant_id=variant_ids[(size, colour)] if variant_ids else None,
                ))
        sp = SupplyProduct(
            id=sp_id, vendor_id=vendor.id, title=design.title, category=design.category,
            season=Season(design.season), material=design.material, garment=design.garment,
            role=role, product_id=product_id, sizes=tuple(design.sizes), colours=tuple(design.colours),
            sku_ids=tuple(sku_ids), ref_price=design.ref_price,
            popularity=round(design.popularity * scale, 5), elasticity=design.elasticity,
        )
        supply_products.append(sp)
        return sp

    for i, design in enumerate(listed):
        product_id = f"PRD-{i + 1:03d}"
        r = rng("product", product_id)
        primary = _pick_vendor(r, vendors, design.category, set())
        variant_ids = {
            (size, colour): f"{product_id}-{size}-{vocab.COLOUR_CODE[colour]}"
            for size in design.sizes for colour in design.colours
        }
        sp = add_supply(design, primary, SupplyRole.PRIMARY, product_id, variant_ids)
        alts = []
        if r.chance(0.38):
            alt_vendor = _pick_vendor(r, vendors, design.category, {primary.id})
            if alt_vendor.country == primary.country and r.chance(0.6):
                alt_vendor = _pick_vendor(r, vendors, design.category, {primary.id})
            alts.append(add_supply(design, alt_vendor, SupplyRole.ALTERNATE, product_id, variant_ids))
        # Colour demand: the first colours (core ones come first more often) sell more.
        colour_w = [1.0 / (1.0 + 0.35 * k) * r.uniform(0.7, 1.3) for k in range(len(design.colours))]
        size_w = [size_weight(s, design.sizes) for s in design.sizes]
        norm = sum(colour_w) * sum(size_w)
        skus_by_key = {(s.size, s.colour): s for s in supply_skus if s.supply_product_id == sp.id}
        markup = 1.0
        roll = r.random()
        if roll < 0.12:
            markup = r.uniform(1.18, 1.38)  # priced well above what the market bears
        elif roll < 0.22:
            markup = r.uniform(0.78, 0.9)  # left on a stale markdown
        price = _round_price(design.ref_price * markup / 100.0)
        rows: list[VariantRow] = []
        for size, sw in zip(design.sizes, size_w, strict=True):
            for colour, cw in zip(design.colours, colour_w, strict=True):
                key = (size, colour)
                rows.append({
                    "id": variant_ids[key], "size": size, "colour": colour, "price": price,
                    "unit_cost": skus_by_key[key].unit_cost,
                    "sku_ids": (skus_by_key[key].id,) + tuple(
                        f"{alt.id}-{size}-{vocab.COLOUR_CODE[colour]}" for alt in alts),
                    "mix": round(sw * cw / norm, 6),
                })
        variants_by_product[product_id] = rows
        weak_copy = r.chance(0.3)
        products.append(Product(
            id=product_id, title=design.title, category=design.category, season=Season(design.season),
            material=design.material, garment=design.garment,
            description=_description(design, weak_copy, r),
            supply_product_id=sp.id, alt_supply_product_ids=tuple(a.id for a in alts),
            variant_ids=tuple(row["id"] for row in rows),
            listed_since=0, active=True,
            ref_price=design.ref_price, popularity=round(design.popularity * scale, 5),
            elasticity=design.elasticity,
        ))
    for design in unlisted:
        r = rng("unlisted", design.key)
        add_supply(design, _pick_vendor(r, vendors, design.category, set()), SupplyRole.UNLISTED, None, None)
    return supply_products, supply_skus, products, variants_by_product


def _description(design: _Design, weak: bool, r: Stream) -> str:
    if weak:
        return f"{design.garment} in {design.material.lower()}."
    fit = {"": "a true-to-size fit", "Relaxed": "a relaxed, easy fit", "Classic": "a classic fit",
           "Slim": "a slim, tailored fit", "Oversized": "an oversized fit; size down for a closer cut",
           "Cropped": "a cropped length that sits at the waist",
           "Essential": "a clean, true-to-size fit"}[design.fit]
    season = {"warm": "Made for warm days.", "cold": "Made for cold days.",
              "all-season": "Worn year-round."}[design.season]
    care = vocab.CARE.get(design.material, vocab.DEFAULT_CARE)
    colours = ", ".join(c.lower() for c in design.colours[:4])
    return (f"The {design.title.lower()} is cut from {design.material.lower()} with {fit}. "
            f"{season} Available in {colours}. Care: {care}")
