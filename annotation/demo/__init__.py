"""The demo study `seed_demo` builds: a small but complete study, made in seconds, fetched from nowhere.

``conversations`` writes the synthetic conversations, ``labels`` decides what each demo
clinician and each demo judge answers, ``seed`` puts them through the app's own services (the
ratings import, consensus, the judge path with its response cache, sampling plans).
"""
