# I17: the program behind a huge argument: it reports what it received.
OUT["args"] = len(ARGS)
OUT["bytes"] = sum(len(a) for a in ARGS)
done()
