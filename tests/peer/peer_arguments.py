"""The options every side-by-side run against the authors' code takes: where their
repository is, our expnet, and a work folder."""
import argparse


def side_by_side_parser(doc):
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--authors", required=True, help="folder of the authors' ExpansionNet_v2 repository")
    parser.add_argument("--expnet", required=True)
    parser.add_argument("--work", required=True)
    return parser
