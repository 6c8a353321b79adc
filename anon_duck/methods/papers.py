"""The papers the methods implement: the one place their citations are written.

The demo, ``anon-duck methods`` and the method summaries cite a paper by its short form
("Poulis et al., 2017"); the docs use the same short forms, with the full references in
README.md. Each entry was checked against the paper's text in the project's reading folder
(``/work/shared/seeds/NNN_*.txt``; the "seed" number is kept only as ``seed`` below, so a
reader of the specs can find the file). Three of those texts start at the abstract, without
their title block (000, 002, 003): their title, authors and venue come from the publisher's
record that carries the same abstract (for 002 the text names only the corresponding author,
Chung, so the other authors are given by surname as the record lists them), and the DOI is
given so anyone can check. Volume and pages appear only where a text states them.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    """One paper: ``short`` is the in-text citation ("Poulis et al., 2017")."""

    key: str
    seed: str
    authors: tuple[str, ...]
    title: str
    venue: str
    year: int
    doi: str

    @property
    def who(self) -> str:
        """The authors as a citation names them: "Poulis et al."."""
        surname = self.authors[0].split()[-1]
        return surname if len(self.authors) == 1 else (
            f"{surname} and {self.authors[1].split()[-1]}" if len(self.authors) == 2 else f"{surname} et al.")

    @property
    def short(self) -> str:
        return f"{self.who}, {self.year}"

    @property
    def narrative(self) -> str:
        """The citation inside a sentence or before a section number: "Poulis et al. (2017)"."""
        return f"{self.who} ({self.year})"

    @property
    def reference(self) -> str:
        """The full reference, one line: authors, title, venue, year, DOI."""
        return f"{', '.join(self.authors)}. {self.title}. {self.venue}, {self.year}. doi:{self.doi}"


PAPERS: dict[str, Paper] = {p.key: p for p in (
    Paper("artuc", "000",
          ("Giorgos Poulis", "Grigorios Loukides", "Spiros Skiadopoulos", "Aris Gkoulalas-Divanis"),
          "Anonymizing datasets with demographics and diagnosis codes in the presence of utility constraints",
          "Journal of Biomedical Informatics", 2017, "10.1016/j.jbi.2016.11.001"),
    Paper("disassociation", "001",
          ("Grigorios Loukides", "John Liagouris", "Aris Gkoulalas-Divanis", "Manolis Terrovitis"),
          "Disassociation for electronic health record privacy",
          "Journal of Biomedical Informatics 50, 46-61", 2014, "10.1016/j.jbi.2014.05.009"),
    Paper("counterfeit", "002",
          ("Lee", "Kim", "Kim", "Chung"),
          "Utility-preserving anonymization for health data publishing",
          "BMC Medical Informatics and Decision Making 17:104", 2017, "10.1186/s12911-017-0499-0"),
    Paper("lkc", "003",
          ("Noman Mohammed", "Benjamin C. M. Fung", "Patrick C. K. Hung", "Cheuk-kwong Lee"),
          "Anonymizing healthcare data: a case study on the blood transfusion service",
          "ACM SIGKDD International Conference on Knowledge Discovery and Data Mining (KDD '09)", 2009, "10.1145/1557019.1557157"),
    Paper("longitudinal", "004",
          ("Acar Tamersoy", "Grigorios Loukides", "Mehmet Ercan Nergiz", "Yucel Saygin", "Bradley Malin"),
          "Anonymization of longitudinal electronic medical records",
          "IEEE Transactions on Information Technology in Biomedicine", 2012,
          "10.1109/TITB.2012.2185850"),
    Paper("mondrian", "",          # not one of the project's seed papers: ARX's local recoding
          ("Kristen LeFevre", "David J. DeWitt", "Raghu Ramakrishnan"),
          "Mondrian Multidimensional K-Anonymity",
          "22nd International Conference on Data Engineering (ICDE '06)", 2006, "10.1109/ICDE.2006.101"),
)}


def cite(key: str) -> str:
    """The short citation of a paper, for summaries and tables ("Poulis et al., 2017")."""
    return PAPERS[key].short


# The paper each built-in method follows (fulldomain is the comparator of Lee et al.'s paper,
# cba the baseline of Loukides et al.'s, both ArtUC variants the paper's own).
METHOD_PAPER: dict[str, str] = {
    "artuc": "artuc", "artuc_baseline": "artuc", "artuc_rmr": "artuc",
    "disassociation": "disassociation", "cba": "disassociation",
    "counterfeit": "counterfeit", "fulldomain": "counterfeit",
    "lkc": "lkc",
    "longitudinal": "longitudinal",
    "mondrian": "mondrian",
}


def references(methods: list[str] | None = None) -> list[str]:
    """``short: full reference`` lines of the papers behind ``methods`` (every paper when None),
    in the order of first mention: what the demo and ``anon-duck methods`` print below their
    tables."""
    keys = list(PAPERS) if methods is None else list(dict.fromkeys(
        METHOD_PAPER[m] for m in methods if m in METHOD_PAPER))
    return [f"{PAPERS[k].short}: {PAPERS[k].reference}" for k in keys]
