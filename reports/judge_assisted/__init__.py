"""Judge-assisted scorecards: prediction-powered scores per chatbot beside judge-only and human-only."""
