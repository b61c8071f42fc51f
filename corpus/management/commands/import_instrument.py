from corpus.management.commands.import_rubric import Command as RubricCommand


class Command(RubricCommand):
    help = "Import an evalsite instrument (YAML/JSON) or a VERA-MH rubric; same as import_rubric."
