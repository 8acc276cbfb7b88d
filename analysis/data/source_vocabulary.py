"""The persona vocabularies at the context-compression source's sizes: the words `personas.VOCABULARIES["source"]`
adds to the small vocabularies this repository started with (36 first names, 36 surnames, 24 professions, 20 employers,
cities and countries), to reach the source's 250 first names, 210 surnames, 180 professions, 200 employers, 200 cities
and 120 countries. Written for this project (real place names, invented companies), not copied.

The same rules as the small lists, checked by the tests: no word is in the out-of-distribution probes' lists (the
unseen-values probe stays unseen), none contains another vocabulary word or appears inside a template, a question or a
distractor sentence (a fact sentence is found by its value), and no first name starts another word.
"""

# 44 more first names
EXTRA_FIRST_NAMES = (
    "Adele", "Aldo", "Amadou", "Anneli", "Arvid", "Aziz", "Benno", "Berit", "Bilal", "Birgit", "Caius", "Cormac",
    "Dario", "Desta", "Dilnoza", "Edda", "Eero", "Fintan", "Folake", "Gaspard", "Hakon", "Hedda", "Inaya", "Isolde",
    "Jalil", "Jovana", "Keziah", "Linnea", "Lwazi", "Mikko", "Nanami", "Nkechi", "Oded", "Otso", "Pia", "Ragnar",
    "Rashida", "Solveig", "Teodor", "Tove", "Ugo", "Wilhelmina", "Yannick", "Ebba",
)

# 174 more surnames
EXTRA_SURNAMES = (
    "Abbott", "Adeyemi", "Akerman", "Alvarez", "Amundsen", "Andrade", "Arslan", "Asante", "Bakker", "Balogun", "Barros",
    "Bauer", "Bellini", "Bergstrom", "Bishop", "Blanco", "Bondarenko", "Borges", "Brandt", "Caldwell", "Carvalho",
    "Chaudhry", "Cisse", "Costa", "Crowley", "Dahl", "Danso", "Dekker", "Demir", "Diallo", "Dimitrov", "Dorsey",
    "Dubrovsky", "Eklund", "Engel", "Esposito", "Falk", "Farrow", "Fischer", "Fitzgerald", "Fontaine", "Forsberg",
    "Foster", "Gallo", "Garrido", "Gomez", "Grant", "Greco", "Gustafsson", "Hakimi", "Hansen", "Hartmann", "Hayes",
    "Hendriks", "Herrera", "Holm", "Horvat", "Ibsen", "Iglesias", "Jensen", "Jovanovic", "Kamau", "Kapoor", "Karlsson",
    "Kaya", "Keller", "Kiplagat", "Klein", "Kruger", "Kuznetsov", "Laine", "Lambert", "Lehmann", "Leone", "Lindberg",
    "Lopez", "Lund", "Maier", "Mancini", "Marsh", "Martins", "Mendes", "Mercer", "Molina", "Morales", "Moretti",
    "Mueller", "Murphy", "Mwangi", "Navarro", "Nielsen", "Njoroge", "Nowak", "Nunez", "Obi", "Oduya", "Oliveira",
    "Ortega", "Osei", "Owusu", "Ozturk", "Pajari", "Park", "Pereira", "Pham", "Pohl", "Popescu", "Quinn", "Rahman",
    "Ramos", "Reyes", "Richter", "Rinaldi", "Rivera", "Romero", "Rosen", "Russo", "Saari", "Salazar", "Sandoval",
    "Santos", "Sato", "Schmidt", "Schultz", "Serrano", "Silva", "Sokolov", "Soto", "Stewart", "Strand", "Suzuki",
    "Thorsen", "Toivonen", "Torres", "Tran", "Unger", "Urban", "Vasquez", "Vidal", "Virtanen", "Vogel", "Wagner",
    "Walsh", "Weber", "Wieczorek", "Wolff", "Yamada", "Yildiz", "Zamora", "Zhang", "Ziegler", "Zuniga", "Achebe",
    "Bianchi", "Castro", "Dunbar", "Eriksen", "Ferrari", "Galvez", "Hoffman", "Ito", "Janssen", "Kovacs", "Abara",
    "Bjork", "Cardenas", "Delgado", "Everett", "Fagerlund", "Halloran", "Ishikawa", "Jablonski", "Kristiansen",
    "Lozano",
)

# 156 more professions
EXTRA_PROFESSIONS = (
    "actuary", "agronomist", "anaesthetist", "animator", "archaeologist", "archivist", "arborist", "astronaut",
    "auditor", "bailiff", "ballerina", "bartender", "blacksmith", "boatbuilder", "bookbinder", "botanist", "brewer",
    "bricklayer", "butcher", "cabinetmaker", "cardiologist", "caretaker", "cartoonist", "cashier", "chauffeur", "chef",
    "chiropractor", "choreographer", "cobbler", "composer", "conductor", "confectioner", "conservator", "copywriter",
    "courier", "curator", "dairymaid", "decorator", "dermatologist", "detective", "dietitian", "diplomat", "dispatcher",
    "diver", "economist", "editor", "embalmer", "engraver", "entomologist", "epidemiologist", "ethicist", "falconer",
    "farmer", "farrier", "fisherman", "fishmonger", "forester", "gardener", "genealogist", "geographer", "glazier",
    "goldsmith", "greengrocer", "groundskeeper", "gunsmith", "hairdresser", "harpist", "headhunter", "herbalist",
    "historian", "hydrologist", "illustrator", "interpreter", "investigator", "jeweller", "joiner", "judge",
    "kennelman", "lecturer", "lexicographer", "lifeguard", "linguist", "lumberjack", "machinist", "magistrate",
    "mapmaker", "marine", "mathematician", "mechanic", "meteorologist", "microbiologist", "midwife", "milliner",
    "miner", "model", "monk", "musician", "navigator", "neurologist", "notary", "novelist", "oceanographer",
    "ornithologist", "orthodontist", "paramedic", "paralegal", "pathologist", "pediatrician", "perfumer",
    "pharmacologist", "philosopher", "physicist", "physiotherapist", "piano tuner", "playwright", "podiatrist", "poet",
    "policeman", "potter", "producer", "programmer", "projectionist", "psychologist", "publisher", "puppeteer",
    "quilter", "radiographer", "ranger", "receptionist", "referee", "researcher", "roofer", "saddler", "sailor",
    "scientist", "sculptor", "seamstress", "secretary", "shepherd", "shoemaker", "silversmith", "singer", "stonemason",
    "statistician", "steward", "stuntman", "surgeon", "tailor", "tanner", "taxidermist", "tiler", "toolmaker",
    "tour guide", "toymaker", "tutor", "typographer",
)

# 180 more employers
EXTRA_EMPLOYERS = (
    "Amber Analytics", "Amber Freight", "Amber Dairy", "Amber Optics", "Amber Ceramics", "Amber Robotics",
    "Aspen Analytics", "Aspen Freight", "Aspen Dairy", "Aspen Optics", "Aspen Ceramics", "Aspen Robotics",
    "Birch Analytics", "Birch Freight", "Birch Dairy", "Birch Optics", "Birch Ceramics", "Birch Robotics",
    "Boulder Analytics", "Boulder Freight", "Boulder Dairy", "Boulder Optics", "Boulder Ceramics", "Boulder Robotics",
    "Canyon Analytics", "Canyon Freight", "Canyon Dairy", "Canyon Optics", "Canyon Ceramics", "Canyon Robotics",
    "Cedar Analytics", "Cedar Freight", "Cedar Dairy", "Cedar Optics", "Cedar Ceramics", "Cedar Robotics",
    "Clover Analytics", "Clover Freight", "Clover Dairy", "Clover Optics", "Clover Ceramics", "Clover Robotics",
    "Coral Analytics", "Coral Freight", "Coral Dairy", "Coral Optics", "Coral Ceramics", "Coral Robotics",
    "Delta Analytics", "Delta Freight", "Delta Dairy", "Delta Optics", "Delta Ceramics", "Delta Robotics",
    "Ember Analytics", "Ember Freight", "Ember Dairy", "Ember Optics", "Ember Ceramics", "Ember Robotics",
    "Fjord Analytics", "Fjord Freight", "Fjord Dairy", "Fjord Optics", "Fjord Ceramics", "Fjord Robotics",
    "Glacier Analytics", "Glacier Freight", "Glacier Dairy", "Glacier Optics", "Glacier Ceramics", "Glacier Robotics",
    "Harvest Analytics", "Harvest Freight", "Harvest Dairy", "Harvest Optics", "Harvest Ceramics", "Harvest Robotics",
    "Hazel Analytics", "Hazel Freight", "Hazel Dairy", "Hazel Optics", "Hazel Ceramics", "Hazel Robotics",
    "Indigo Analytics", "Indigo Freight", "Indigo Dairy", "Indigo Optics", "Indigo Ceramics", "Indigo Robotics",
    "Jasper Analytics", "Jasper Freight", "Jasper Dairy", "Jasper Optics", "Jasper Ceramics", "Jasper Robotics",
    "Kestrel Analytics", "Kestrel Freight", "Kestrel Dairy", "Kestrel Optics", "Kestrel Ceramics", "Kestrel Robotics",
    "Lantern Analytics", "Lantern Freight", "Lantern Dairy", "Lantern Optics", "Lantern Ceramics", "Lantern Robotics",
    "Maple Analytics", "Maple Freight", "Maple Dairy", "Maple Optics", "Maple Ceramics", "Maple Robotics",
    "Marble Analytics", "Marble Freight", "Marble Dairy", "Marble Optics", "Marble Ceramics", "Marble Robotics",
    "Nova Analytics", "Nova Freight", "Nova Dairy", "Nova Optics", "Nova Ceramics", "Nova Robotics", "Orchid Analytics",
    "Orchid Freight", "Orchid Dairy", "Orchid Optics", "Orchid Ceramics", "Orchid Robotics", "Pebble Analytics",
    "Pebble Freight", "Pebble Dairy", "Pebble Optics", "Pebble Ceramics", "Pebble Robotics", "Raven Analytics",
    "Raven Freight", "Raven Dairy", "Raven Optics", "Raven Ceramics", "Raven Robotics", "Sable Analytics",
    "Sable Freight", "Sable Dairy", "Sable Optics", "Sable Ceramics", "Sable Robotics", "Summit Analytics",
    "Summit Freight", "Summit Dairy", "Summit Optics", "Summit Ceramics", "Summit Robotics", "Thistle Analytics",
    "Thistle Freight", "Thistle Dairy", "Thistle Optics", "Thistle Ceramics", "Thistle Robotics", "Willow Analytics",
    "Willow Freight", "Willow Dairy", "Willow Optics", "Willow Ceramics", "Willow Robotics", "Alder Analytics",
    "Alder Freight", "Alder Dairy", "Alder Optics", "Alder Ceramics", "Alder Robotics", "Beacon Analytics",
    "Beacon Freight", "Beacon Dairy", "Beacon Optics", "Beacon Ceramics", "Beacon Robotics",
)

# 180 more cities
EXTRA_CITIES = (
    "Aarhus", "Accra", "Ankara", "Antwerp", "Arequipa", "Asuncion", "Athens", "Auckland", "Austin", "Baku", "Bangalore",
    "Barcelona", "Basel", "Beirut", "Belfast", "Belgrade", "Bilbao", "Bogota", "Bordeaux", "Boston", "Bratislava",
    "Brisbane", "Bristol", "Brno", "Bucharest", "Budapest", "Cairo", "Calgary", "Cardiff", "Casablanca", "Chennai",
    "Chicago", "Coimbra", "Cologne", "Copenhagen", "Cork", "Curitiba", "Dakar", "Dallas", "Delft", "Dresden", "Dublin",
    "Dundee", "Durban", "Edinburgh", "Eindhoven", "Florence", "Fukuoka", "Galway", "Gdansk", "Geneva", "Genoa",
    "Gothenburg", "Granada", "Graz", "Guadalajara", "Hanoi", "Hanover", "Havana", "Helsinki", "Hobart", "Houston",
    "Innsbruck", "Istanbul", "Izmir", "Jakarta", "Kampala", "Kaunas", "Kiev", "Kingston", "Kobe", "Kolkata", "Kyoto",
    "Lagos", "Lausanne", "Leeds", "Lille", "Lima", "Linz", "Lisbon", "Liverpool", "Ljubljana", "Lodz", "Lucerne",
    "Lusaka", "Lviv", "Madrid", "Malaga", "Malmo", "Manchester", "Manila", "Marrakesh", "Marseille", "Medellin",
    "Memphis", "Minsk", "Mombasa", "Montreal", "Mumbai", "Munich", "Nagoya", "Nantes", "Naples", "Nashville", "Odessa",
    "Oporto", "Oslo", "Ottawa", "Oxford", "Padua", "Palermo", "Pamplona", "Paris", "Perth", "Pisa", "Plymouth",
    "Poznan", "Prague", "Pune", "Quebec", "Quito", "Reykjavik", "Riga", "Rotterdam", "Salvador", "Sapporo", "Sarajevo",
    "Seattle", "Sendai", "Seoul", "Sheffield", "Skopje", "Stockholm", "Strasbourg", "Stuttgart", "Suva", "Sydney",
    "Tallinn", "Tampa", "Tangier", "Tartu", "Tehran", "Toulouse", "Turin", "Turku", "Uppsala", "Valencia", "Vancouver",
    "Venice", "Verona", "Vienna", "Vilnius", "Warsaw", "Wellington", "Wroclaw", "Yokohama", "Zagreb", "Zurich",
    "Zaragoza", "Aberdeen", "Alicante", "Bergamo", "Bonn", "Brugge", "Cadiz", "Cluj", "Debrecen", "Essen", "Faro",
    "Freiburg", "Gijon", "Haifa", "Halifax", "Heidelberg", "Kassel", "Leuven", "Maastricht", "Mainz", "Nimes", "Oulu",
)

# 100 more countries
EXTRA_COUNTRIES = (
    "Albania", "Algeria", "Angola", "Argentina", "Armenia", "Australia", "Azerbaijan", "Bangladesh", "Belarus",
    "Belgium", "Benin", "Bolivia", "Botswana", "Bulgaria", "Cambodia", "Cameroon", "Colombia", "Croatia", "Cuba",
    "Cyprus", "Denmark", "Ecuador", "Estonia", "Ethiopia", "Fiji", "France", "Gabon", "Georgia", "Germany", "Guatemala",
    "Honduras", "India", "Indonesia", "Iran", "Iraq", "Israel", "Italy", "Japan", "Jordan", "Kazakhstan", "Kyrgyzstan",
    "Laos", "Lebanon", "Lesotho", "Liberia", "Libya", "Lithuania", "Madagascar", "Malawi", "Malaysia", "Malta",
    "Mauritius", "Moldova", "Montenegro", "Mozambique", "Namibia", "Netherlands", "Nicaragua", "Pakistan", "Panama",
    "Paraguay", "Philippines", "Qatar", "Romania", "Rwanda", "Senegal", "Serbia", "Singapore", "Slovakia", "Slovenia",
    "Somalia", "Spain", "Sweden", "Switzerland", "Syria", "Taiwan", "Tajikistan", "Tanzania", "Thailand", "Togo",
    "Turkey", "Uganda", "Ukraine", "Uzbekistan", "Venezuela", "Yemen", "Zambia", "Zimbabwe", "Bhutan", "Brunei", "Chad",
    "Eritrea", "Gambia", "Haiti", "Kuwait", "Oman", "Samoa", "Tonga", "Vanuatu", "Burundi",
)
