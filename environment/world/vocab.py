"""The words the world is made of: garments, materials, colours, places, names.

Kept apart from the generator so the generator reads as the recipe and this file
as the pantry.  Changing anything here changes the world hash.
"""

from __future__ import annotations

from typing import TypedDict

ALPHA6 = ("XS", "S", "M", "L", "XL", "XXL")
ALPHA5 = ("XS", "S", "M", "L", "XL")
ALPHA3 = ("S", "M", "L")
WAIST = ("26", "28", "30", "32", "34", "36", "38")
SHOE = ("36", "37", "38", "39", "40", "41", "42", "43", "44", "45")
ONE = ("OS",)

# Share of a line's demand by size: the middle of the run sells most.
SIZE_WEIGHTS = {
    "XS": 0.07, "S": 0.19, "M": 0.29, "L": 0.25, "XL": 0.14, "XXL": 0.06,
    "26": 0.08, "28": 0.15, "30": 0.21, "32": 0.22, "34": 0.17, "36": 0.11, "38": 0.06,
    "36s": 0.05,
    "OS": 1.0,
}
SHOE_WEIGHTS = {"36": 0.06, "37": 0.09, "38": 0.12, "39": 0.13, "40": 0.14,
                "41": 0.14, "42": 0.12, "43": 0.10, "44": 0.06, "45": 0.04}

COLOURS = (
    ("Black", "BLK"), ("White", "WHT"), ("Navy", "NVY"), ("Heather Grey", "GRY"),
    ("Charcoal", "CHR"), ("Ecru", "ECR"), ("Sand", "SND"), ("Olive", "OLV"),
    ("Forest", "FST"), ("Rust", "RST"), ("Burgundy", "BGD"), ("Camel", "CML"),
    ("Sky", "SKY"), ("Cobalt", "CBT"), ("Blush", "BLS"), ("Mustard", "MST"),
    ("Sage", "SGE"), ("Stone", "STN"), ("Chocolate", "CHC"), ("Indigo", "IND"),
    ("Oat", "OAT"), ("Coral", "CRL"), ("Teal", "TEA"), ("Lilac", "LLC"), ("Red", "RED"),
)
COLOUR_CODE = dict(COLOURS)
CORE_COLOURS = ("Black", "Navy", "White", "Heather Grey", "Charcoal", "Ecru")

# garment, category, season, size run, reference price range (dollars),
# materials it is made in, colour count range
GARMENTS = (
    ("Crew Tee", "tops", "all-season", ALPHA6, (24, 38), ("Organic Cotton", "Slub Jersey", "Pima Cotton", "Linen-Blend"), (4, 7)),
    ("Pocket Tee", "tops", "warm", ALPHA6, (26, 36), ("Organic Cotton", "Garment-Dyed Cotton"), (4, 6)),
    ("Long-Sleeve Tee", "tops", "cold", ALPHA6, (30, 42), ("Organic Cotton", "Waffle Knit", "Pima Cotton"), (4, 6)),
    ("Henley", "tops", "all-season", ALPHA6, (34, 48), ("Slub Jersey", "Waffle Knit"), (3, 5)),
    ("Tank", "tops", "warm", ALPHA5, (18, 28), ("Ribbed Cotton", "Linen-Blend"), (4, 7)),
    ("Oxford Shirt", "shirts", "all-season", ALPHA6, (48, 68), ("Cotton Oxford",), (3, 5)),
    ("Camp-Collar Shirt", "shirts", "warm", ALPHA6, (44, 62), ("Linen", "Tencel", "Seersucker"), (3, 6)),
    ("Poplin Shirt", "shirts", "all-season", ALPHA6, (42, 58), ("Cotton Poplin",), (3, 5)),
    ("Flannel Shirt", "shirts", "cold", ALPHA6, (48, 66), ("Brushed Flannel",), (3, 5)),
    ("Overshirt", "shirts", "cold", ALPHA6, (58, 84), ("Cotton Twill", "Corduroy", "Wool-Blend"), (3, 5)),
    ("Crew Sweater", "knitwear", "cold", ALPHA6, (62, 98), ("Merino", "Lambswool", "Cashmere-Blend", "Cotton Knit"), (4, 6)),
    ("Cardigan", "knitwear", "cold", ALPHA6, (68, 104), ("Merino", "Lambswool", "Cotton Knit"), (3, 5)),
    ("Turtleneck", "knitwear", "cold", ALPHA6, (64, 96), ("Merino", "Cashmere-Blend"), (3, 5)),
    ("Quarter-Zip", "knitwear", "cold", ALPHA6, (66, 92), ("Merino", "Cotton Knit"), (3, 5)),
    ("Summer Knit Polo", "knitwear", "warm", ALPHA6, (54, 74), ("Cotton Knit", "Linen-Blend"), (3, 5)),
    ("Puffer Jacket", "outerwear", "cold", ALPHA6, (128, 188), ("Recycled Nylon",), (3, 5)),
    ("Wool Coat", "outerwear", "cold", ALPHA6, (168, 248), ("Wool-Blend", "Boiled Wool"), (2, 4)),
    ("Rain Shell", "outerwear", "all-season", ALPHA6, (98, 148), ("Recycled Nylon", "Waxed Cotton"), (3, 5)),
    ("Trench Coat", "outerwear", "all-season", ALPHA6, (148, 218), ("Cotton Gabardine",), (2, 4)),
    ("Chore Jacket", "outerwear", "all-season", ALPHA6, (88, 128), ("Cotton Canvas", "Corduroy"), (3, 5)),
    ("Slip Dress", "dresses", "warm", ALPHA5, (58, 88), ("Satin", "Tencel"), (4, 6)),
    ("Wrap Dress", "dresses", "all-season", ALPHA5, (64, 96), ("Jersey", "Tencel", "Crepe"), (4, 6)),
    ("Shirt Dress", "dresses", "all-season", ALPHA5, (62, 92), ("Cotton Poplin", "Linen"), (3, 5)),
    ("Sundress", "dresses", "warm", ALPHA5, (48, 72), ("Linen", "Seersucker", "Cotton Voile"), (4, 7)),
    ("Knit Midi Dress", "dresses", "cold", ALPHA5, (78, 112), ("Merino", "Ribbed Knit"), (3, 5)),
    ("Chino", "bottoms", "all-season", WAIST, (54, 78), ("Cotton Twill", "Stretch Twill"), (3, 5)),
    ("Pleated Trouser", "bottoms", "all-season", WAIST, (68, 98), ("Wool-Blend", "Tencel", "Linen"), (3, 4)),
    ("Shorts", "bottoms", "warm", WAIST, (38, 56), ("Cotton Twill", "Linen", "Seersucker"), (3, 5)),
    ("Midi Skirt", "bottoms", "all-season", ALPHA5, (48, 74), ("Satin", "Linen", "Corduroy"), (3, 5)),
    ("Straight Jean", "denim", "all-season", WAIST, (68, 98), ("Rigid Denim", "Stretch Denim"), (3, 4)),
    ("Slim Jean", "denim", "all-season", WAIST, (64, 92), ("Stretch Denim",), (3, 4)),
    ("Wide-Leg Jean", "denim", "all-season", WAIST, (72, 104), ("Rigid Denim", "Organic Denim"), (3, 4)),
    ("Denim Jacket", "denim", "all-season", ALPHA6, (84, 118), ("Rigid Denim", "Organic Denim"), (2, 4)),
    ("Legging", "activewear", "all-season", ALPHA5, (42, 64), ("Recycled Nylon", "Performance Knit"), (4, 7)),
    ("Sports Bra", "activewear", "all-season", ALPHA5, (34, 52), ("Performance Knit",), (4, 6)),
    ("Running Short", "activewear", "warm", ALPHA5, (32, 48), ("Recycled Nylon",), (4, 6)),
    ("Track Jacket", "activewear", "cold", ALPHA6, (68, 96), ("Performance Knit", "Recycled Nylon"), (3, 5)),
    ("Hoodie", "loungewear", "cold", ALPHA6, (58, 84), ("Loopback Fleece", "Organic Cotton"), (4, 6)),
    ("Sweatpant", "loungewear", "cold", ALPHA6, (52, 76), ("Loopback Fleece",), (4, 6)),
    ("Lounge Short", "loungewear", "warm", ALPHA6, (34, 48), ("Terry", "Jersey"), (4, 6)),
    ("Swim Short", "swimwear", "warm", ALPHA5, (38, 58), ("Recycled Polyester",), (4, 7)),
    ("One-Piece Swimsuit", "swimwear", "warm", ALPHA5, (58, 86), ("Recycled Nylon",), (3, 6)),
    ("Beanie", "accessories", "cold", ONE, (22, 34), ("Merino", "Lambswool", "Cotton Knit"), (5, 10)),
    ("Scarf", "accessories", "cold", ONE, (36, 68), ("Lambswool", "Cashmere-Blend"), (4, 9)),
    ("Bucket Hat", "accessories", "warm", ONE, (26, 38), ("Cotton Twill", "Linen"), (4, 8)),
    ("Tote Bag", "accessories", "all-season", ONE, (28, 46), ("Cotton Canvas", "Waxed Cotton"), (3, 7)),
    ("Crew Socks 3-Pack", "accessories", "all-season", ALPHA3, (16, 24), ("Organic Cotton", "Merino"), (4, 8)),
    ("Leather Belt", "accessories", "all-season", ALPHA3, (38, 58), ("Vegetable-Tanned Leather",), (2, 3)),
    ("Canvas Sneaker", "footwear", "warm", SHOE, (64, 88), ("Cotton Canvas",), (3, 4)),
    ("Chelsea Boot", "footwear", "cold", SHOE, (148, 208), ("Suede", "Leather"), (2, 3)),
    ("Slide Sandal", "footwear", "warm", SHOE, (38, 58), ("Cork", "Leather"), (2, 4)),
    ("Penny Loafer", "footwear", "all-season", SHOE, (118, 168), ("Leather",), (2, 3)),
)

# Where each category is usually made: country -> weight.
CATEGORY_ORIGINS: dict[str, dict[str, float]] = {
    "tops": {"China": 4, "Bangladesh": 3, "India": 2, "Vietnam": 1, "Portugal": 1, "United States": 0.5},
    "shirts": {"China": 3, "India": 3, "Bangladesh": 1, "Portugal": 1, "Turkey": 1},
    "knitwear": {"China": 5, "Italy": 2, "Turkey": 1, "Portugal": 1},
    "outerwear": {"China": 5, "Vietnam": 2, "Turkey": 1, "Italy": 0.5},
    "dresses": {"China": 3, "India": 2, "Turkey": 2, "Portugal": 1},
    "bottoms": {"China": 3, "Bangladesh": 2, "Pakistan": 1, "Turkey": 1, "Mexico": 1},
    "denim": {"Pakistan": 3, "Bangladesh": 2, "Mexico": 2, "China": 2, "Turkey": 1},
    "activewear": {"China": 4, "Vietnam": 3},
    "loungewear": {"China": 3, "Bangladesh": 2, "Pakistan": 1, "United States": 1},
    "swimwear": {"China": 4, "Vietnam": 2},
    "accessories": {"China": 4, "India": 1, "Italy": 1, "Mexico": 1},
    "footwear": {"Vietnam": 4, "China": 3, "Portugal": 2, "Italy": 1},
}

# country -> (vendor count, cities)
COUNTRIES = {
    "China": (14, ("Ningbo", "Guangzhou", "Hangzhou", "Dongguan", "Xiamen", "Suzhou", "Qingdao", "Shaoxing", "Wuxi", "Fuzhou", "Jiaxing", "Shantou", "Changzhou", "Nantong")),
    "Bangladesh": (4, ("Dhaka", "Chittagong", "Gazipur", "Narayanganj")),
    "Vietnam": (4, ("Ho Chi Minh City", "Hai Phong", "Da Nang", "Binh Duong")),
    "India": (4, ("Tiruppur", "Ludhiana", "Jaipur", "Bengaluru")),
    "Turkey": (4, ("Istanbul", "Izmir", "Bursa", "Denizli")),
    "Portugal": (3, ("Porto", "Guimaraes", "Braga")),
    "Italy": (2, ("Prato", "Biella")),
    "Pakistan": (2, ("Lahore", "Faisalabad")),
    "Mexico": (2, ("Leon", "Puebla")),
    "United States": (1, ("Los Angeles",)),
}

# Tiers a country's workshops usually sit in.
COUNTRY_TIERS = {
    "China": ("budget", "budget", "standard", "standard", "premium"),
    "Bangladesh": ("budget", "budget", "standard"),
    "Vietnam": ("budget", "standard", "standard"),
    "India": ("budget", "standard", "standard"),
    "Pakistan": ("budget", "standard"),
    "Turkey": ("standard", "standard", "premium"),
    "Portugal": ("premium", "quick-turn"),
    "Italy": ("premium",),
    "Mexico": ("quick-turn", "standard"),
    "United States": ("quick-turn",),
}



class TierTerms(TypedDict):
    """Ranges a vendor's terms are drawn from: whole days and units, then rates and shares."""

    lead: tuple[int, int]
    moq: tuple[int, int]
    defect: tuple[float, float]
    on_time: tuple[float, float]
    cost: tuple[float, float]


# tier -> lead days, MOQ, defect rate, on-time rate, cost share of reference price
TIER_TERMS: dict[str, TierTerms] = {
    "budget": {"lead": (14, 22), "moq": (24, 60), "defect": (0.035, 0.065), "on_time": (0.72, 0.84), "cost": (0.27, 0.33)},
    "standard": {"lead": (8, 14), "moq": (12, 30), "defect": (0.015, 0.03), "on_time": (0.84, 0.92), "cost": (0.34, 0.40)},
    "premium": {"lead": (5, 9), "moq": (6, 15), "defect": (0.005, 0.014), "on_time": (0.92, 0.98), "cost": (0.42, 0.48)},
    "quick-turn": {"lead": (3, 5), "moq": (3, 9), "defect": (0.008, 0.02), "on_time": (0.9, 0.97), "cost": (0.52, 0.58)},
}

VENDOR_WORDS_A = ("Harbor", "Silkline", "Golden Loom", "Evergreen", "Bright Thread", "Lotus",
                  "Pearl River", "Northstar", "Blue Crane", "Jade Needle", "Summit", "Riverbend",
                  "Cedar", "Oriole", "Meridian", "Kestrel", "Saffron", "Tidewater", "Amber", "Linden")
VENDOR_WORDS_B = ("Textiles", "Garments", "Apparel", "Knitting Mills", "Manufacturing", "Clothing Co.",
                  "Fashion Works", "Sewing Works", "Industries", "Atelier", "Tricot", "Confeccoes")

FIRST_NAMES = ("Ava", "Liam", "Maya", "Noah", "Zoe", "Ethan", "Chloe", "Lucas", "Ella", "Mason",
               "Grace", "Owen", "Lily", "Caleb", "Nora", "Julian", "Hannah", "Leo", "Aria", "Isaac",
               "Priya", "Mateo", "Sofia", "Daniel", "Amara", "Wyatt", "Layla", "Henry", "Camila", "Jack",
               "Mei", "Elijah", "Ruby", "Samuel", "Naomi", "Gabriel", "Iris", "Theo", "Leah", "Miles",
               "Jasmine", "Adrian", "Eva", "Jonah", "Stella", "Ravi", "Clara", "Felix", "Alice", "Omar",
               "Hazel", "Diego", "Violet", "Aiden", "June", "Marcus", "Paige", "Tariq", "Wren", "Simon")
LAST_NAMES = ("Nguyen", "Smith", "Patel", "Garcia", "Johnson", "Kim", "Brown", "Lopez", "Williams",
              "Chen", "Davis", "Martinez", "Miller", "Wilson", "Anderson", "Taylor", "Thomas", "Moore",
              "Jackson", "Martin", "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez", "Clark",
              "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright", "Scott",
              "Torres", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker", "Hall", "Rivera", "Campbell",
              "Mitchell", "Carter", "Roberts", "Gomez", "Phillips", "Evans", "Turner", "Diaz", "Parker",
              "Cruz", "Edwards", "Collins", "Reyes", "Stewart")
CITIES = (("New York", "NY"), ("Brooklyn", "NY"), ("Los Angeles", "CA"), ("San Francisco", "CA"),
          ("San Diego", "CA"), ("Oakland", "CA"), ("Chicago", "IL"), ("Houston", "TX"), ("Austin", "TX"),
          ("Dallas", "TX"), ("Seattle", "WA"), ("Portland", "OR"), ("Denver", "CO"), ("Boston", "MA"),
          ("Philadelphia", "PA"), ("Pittsburgh", "PA"), ("Atlanta", "GA"), ("Miami", "FL"), ("Tampa", "FL"),
          ("Orlando", "FL"), ("Minneapolis", "MN"), ("Phoenix", "AZ"), ("Tucson", "AZ"), ("Nashville", "TN"),
          ("Charlotte", "NC"), ("Raleigh", "NC"), ("Washington", "DC"), ("Baltimore", "MD"), ("Detroit", "MI"),
          ("Columbus", "OH"), ("Cleveland", "OH"), ("Salt Lake City", "UT"), ("Las Vegas", "NV"),
          ("Kansas City", "MO"), ("St. Louis", "MO"), ("New Orleans", "LA"), ("Madison", "WI"),
          ("Richmond", "VA"), ("Providence", "RI"), ("Burlington", "VT"))

NON_DEFECT_RETURN_REASONS = ("size too small", "size too large", "not as pictured", "changed mind",
                             "colour differs from photo", "fabric feel")
DEFECT_RETURN_REASONS = ("defective: seam split", "defective: stain or mark", "defective: broken zip or button",
                         "defective: fabric flaw")

# Fit-sensitive garments come back more often for reasons other than defects.
CATEGORY_RETURN_WEIGHT = {
    "tops": 0.8, "shirts": 1.0, "knitwear": 0.9, "outerwear": 1.0, "dresses": 1.5, "bottoms": 1.3,
    "denim": 1.6, "activewear": 0.9, "loungewear": 0.6, "swimwear": 1.4, "accessories": 0.3, "footwear": 1.5,
}

CARE = {
    "Merino": "Hand wash cold or machine wash on wool cycle; dry flat.",
    "Lambswool": "Hand wash cold; dry flat; store folded.",
    "Cashmere-Blend": "Hand wash cold; dry flat away from heat.",
    "Linen": "Machine wash cold; line dry; softens with every wash.",
    "Leather": "Wipe clean; condition twice a year.",
    "Suede": "Brush dry; protect with a suede spray.",
}
DEFAULT_CARE = "Machine wash cold with like colours; tumble dry low."
