"""Built-in demo texts, written for embedscope (plain data, no imports; `analysis.data.corpora` wraps them).

Three small sets, about 110 sentences in all:

* AMBIGUOUS: every sentence starts with "The <word>", and only a later word settles the sense. In a
  causal (decoder-only) model the state at "<word>" cannot see those later words, so both senses
  share it exactly; only positions after the cue can tell them apart. Label = "word:sense".
* PARAPHRASE_PAIRS: (sentence 1, sentence 2, score) with 1.0 = paraphrase, 0.0 = not. Half of the
  negatives are hard: nearly the same words, different meaning (swapped roles, negation, numbers).
* TOPICS: short sentences, eight per topic. Label = topic.
"""

# (label "word:sense", sentence). Two sentences per sense, eight words.
AMBIGUOUS: list[tuple[str, str]] = [
    ("bank:river", "The bank was steep and muddy after the flood."),
    ("bank:river", "The bank where we fished was covered in reeds and willows."),
    ("bank:finance", "The bank raised its interest rates again."),
    ("bank:finance", "The bank approved our mortgage after checking our salaries."),
    ("bat:animal", "The bat flew out of the cave at dusk to hunt moths."),
    ("bat:animal", "The bat hung upside down from the barn rafters, wings folded."),
    ("bat:sport", "The bat cracked when he hit the fastball over the fence."),
    ("bat:sport", "The bat was made of willow and signed by the whole cricket team."),
    ("crane:bird", "The crane waded through the marsh looking for frogs."),
    ("crane:bird", "The crane spread its grey feathers and called to its mate."),
    ("crane:machine", "The crane lifted steel beams to the top of the tower."),
    ("crane:machine", "The crane operator sat in a cab forty metres above the building site."),
    ("spring:season", "The spring brought blossoms and longer days to the village."),
    ("spring:season", "The spring rains came early, and the farmers planted in March."),
    ("spring:coil", "The spring inside the pen snapped, so the nib would not retract."),
    ("spring:coil", "The spring in the old mattress squeaked every time she rolled over."),
    ("seal:animal", "The seal dived off the rocks and came back with a fish."),
    ("seal:animal", "The seal pup lay on the ice while its mother swam nearby."),
    ("seal:closure", "The seal on the jar was broken, so we threw the jam away."),
    ("seal:closure", "The seal around the window leaked and let the draught in."),
    ("bass:fish", "The bass took the lure and pulled the line toward the weeds."),
    ("bass:fish", "The bass we caught in the lake was grilled for dinner."),
    ("bass:music", "The bass was so loud that the windows rattled during the concert."),
    ("bass:music", "The bass player tuned her four strings before the band started."),
    ("mouse:animal", "The mouse nibbled the cheese and ran behind the fridge."),
    ("mouse:animal", "The mouse built a nest of straw in the corner of the shed."),
    ("mouse:computer", "The mouse stopped working, so I could not move the cursor."),
    ("mouse:computer", "The mouse needs new batteries before it will click on anything."),
    ("match:fire", "The match flared, and he lit the candles on the cake."),
    ("match:fire", "The match was damp and would not strike against the box."),
    ("match:game", "The match ended in a draw after extra time and penalties."),
    ("match:game", "The match was postponed because the pitch was frozen."),
]

# (sentence 1, sentence 2, score): 10 paraphrases, 10 non-paraphrases (5 of them hard negatives).
PARAPHRASE_PAIRS: list[tuple[str, str, float]] = [
    ("A child is reading a book under a tree.", "Under a tree, a kid reads a book.", 1.0),
    ("The meeting was moved to Friday.", "They rescheduled the meeting for Friday.", 1.0),
    ("He forgot his umbrella and got soaked.", "He got drenched because he left his umbrella behind.", 1.0),
    ("The shop closes at six in the evening.", "The store shuts at 6 pm.", 1.0),
    ("She bought a second-hand bicycle.", "She purchased a used bike.", 1.0),
    ("The train was delayed by heavy snow.", "Heavy snowfall made the train late.", 1.0),
    ("Nobody answered the phone at the office.", "No one at the office picked up the phone.", 1.0),
    ("The recipe needs two cups of flour.", "You need two cups of flour for this recipe.", 1.0),
    ("The film was longer than I expected.", "The movie lasted longer than I thought it would.", 1.0),
    ("Prices rose sharply last year.", "Last year costs went up steeply.", 1.0),
    # hard negatives: high word overlap, different meaning
    ("The dog chased the postman down the street.", "The postman chased the dog down the street.", 0.0),
    ("She passed the driving test on her first try.", "She did not pass the driving test on her first try.", 0.0),
    ("The museum opens at nine and closes at five.", "The museum opens at five and closes at nine.", 0.0),
    ("My brother lent me his car for the weekend.", "I lent my brother my car for the weekend.", 0.0),
    ("The company hired three hundred workers.", "The company fired three hundred workers.", 0.0),
    # easy negatives: unrelated content
    ("The soup needs more salt.", "The satellite was launched from a remote island.", 0.0),
    ("Our cat sleeps on the windowsill all afternoon.", "The committee voted to extend the deadline.", 0.0),
    ("The hikers reached the summit before noon.", "Interest on the loan is paid monthly.", 0.0),
    ("He plays the violin in a local orchestra.", "The tomatoes in the greenhouse are ripening.", 0.0),
    ("The printer on the third floor is out of toner.", "Wild horses roam the hills in the north.", 0.0),
]

# (topic, sentence): five topics, eight sentences each.
TOPICS: list[tuple[str, str]] = [
    ("cooking", "Simmer the onions slowly until they turn golden."),
    ("cooking", "Knead the dough for ten minutes, then let it rise."),
    ("cooking", "A pinch of nutmeg lifts a creamy white sauce."),
    ("cooking", "Roast the vegetables in a hot oven with olive oil."),
    ("cooking", "Whisk the eggs and sugar until pale and fluffy."),
    ("cooking", "Season the stew and leave it to cook for two hours."),
    ("cooking", "Chop the garlic finely before adding it to the pan."),
    ("cooking", "Rest the steak for five minutes before slicing it."),
    ("sport", "The striker scored twice in the second half."),
    ("sport", "She won the marathon in a record time."),
    ("sport", "The referee showed a red card for the late tackle."),
    ("sport", "Our team lost the final on penalties."),
    ("sport", "He trains at the swimming pool every morning before work."),
    ("sport", "The tennis champion served an ace to win the set."),
    ("sport", "The coach changed tactics at half-time."),
    ("sport", "The cyclists climbed the mountain pass in the rain."),
    ("weather", "A cold front will bring thunderstorms tonight."),
    ("weather", "Temperatures will fall below freezing by the weekend."),
    ("weather", "Thick fog closed the airport this morning."),
    ("weather", "The heatwave is expected to last until Thursday."),
    ("weather", "Strong winds blew tiles off several roofs."),
    ("weather", "Light drizzle will clear to sunny spells by noon."),
    ("weather", "Snow is forecast for the hills above four hundred metres."),
    ("weather", "The humidity made the afternoon feel even hotter."),
    ("computing", "Restart the laptop to finish installing the update."),
    ("computing", "The database query timed out after thirty seconds."),
    ("computing", "Back up your files before reformatting the disk."),
    ("computing", "The new compiler release makes the code run faster."),
    ("computing", "A memory leak slowly crashed the web server."),
    ("computing", "Use a password manager to store long random passwords."),
    ("computing", "The script reads a CSV file and prints a summary."),
    ("computing", "The graphics card overheated while rendering the video."),
    ("travel", "Our flight to Lisbon leaves at dawn."),
    ("travel", "We booked a small hotel near the old harbour."),
    ("travel", "Remember to renew your passport before the trip."),
    ("travel", "The night train crosses the border at midnight."),
    ("travel", "They rented a campervan to tour the coast."),
    ("travel", "The guidebook recommends visiting the castle early."),
    ("travel", "Our luggage was lost during the connecting flight."),
    ("travel", "We exchanged some money at the station before boarding."),
]
