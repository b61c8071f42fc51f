"""The works a methods paragraph cites, each once, in APA-like form.

A paragraph cites a work by its key (``cite("fleiss1971")`` gives "Fleiss, 1971" for the text)
and lists the key among its references; the page, the JSON and METHODS.md print the full
entries. Identifiers (DOI, URL) are given only where they are certain.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass


@dataclass(frozen=True)
class Reference:
    """One cited work: how the text cites it, and its entry in the reference list."""

    key: str
    cite: str  # in-text form, e.g. "Fleiss, 1971"
    entry: str  # APA-like reference list entry
    doi: str = ""
    url: str = ""

    def as_dict(self) -> dict[str, str]:
        """Return the JSON form (``citation`` is the reference list entry)."""
        out = {"key": self.key, "cite": self.cite, "citation": self.entry}
        if self.doi:
            out["doi"] = self.doi
        if self.url:
            out["url"] = self.url
        return out


_ALL = [
    # Agreement coefficients
    Reference("cohen1960", "Cohen, 1960",
              "Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and Psychological "
              "Measurement, 20(1), 37–46.", doi="10.1177/001316446002000104"),
    Reference("fleiss1971", "Fleiss, 1971",
              "Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychological Bulletin, "
              "76(5), 378–382.", doi="10.1037/h0031619"),
    Reference("gwet2008", "Gwet, 2008",
              "Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of high "
              "agreement. British Journal of Mathematical and Statistical Psychology, 61(1), 29–48.",
              doi="10.1348/000711006X126600"),
    Reference("gwet2014", "Gwet, 2014",
              "Gwet, K. L. (2014). Handbook of inter-rater reliability (4th ed.). Advanced Analytics, LLC."),
    Reference("krippendorff2011", "Krippendorff, 2011",
              "Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Departmental Papers (ASC), "
              "University of Pennsylvania.", url="https://repository.upenn.edu/asc_papers/43"),
    Reference("efron1993", "Efron & Tibshirani, 1993",
              "Efron, B., & Tibshirani, R. J. (1993). An introduction to the bootstrap. Chapman & Hall."),
    Reference("davison1997", "Davison & Hinkley, 1997",
              "Davison, A. C., & Hinkley, D. V. (1997). Bootstrap methods and their application. Cambridge "
              "University Press."),
    Reference("field2007", "Field & Welsh, 2007",
              "Field, C. A., & Welsh, A. H. (2007). Bootstrapping clustered data. Journal of the Royal Statistical "
              "Society: Series B, 69(3), 369–390.", doi="10.1111/j.1467-9868.2007.00593.x"),
    Reference("hesterberg2015", "Hesterberg, 2015",
              "Hesterberg, T. C. (2015). What teachers should know about the bootstrap: Resampling in the "
              "undergraduate statistics curriculum. The American Statistician, 69(4), 371–386.",
              doi="10.1080/00031305.2015.1089789"),
    Reference("wilson1927", "Wilson, 1927",
              "Wilson, E. B. (1927). Probable inference, the law of succession, and statistical inference. Journal of "
              "the American Statistical Association, 22(158), 209–212.", doi="10.1080/01621459.1927.10502953"),
    Reference("brown2001", "Brown, Cai & DasGupta, 2001",
              "Brown, L. D., Cai, T. T., & DasGupta, A. (2001). Interval estimation for a binomial proportion. "
              "Statistical Science, 16(2), 101–133.", doi="10.1214/ss/1009213286"),
    Reference("korn1998", "Korn & Graubard, 1998",
              "Korn, E. L., & Graubard, B. I. (1998). Confidence intervals for proportions with small expected number "
              "of positive counts estimated from survey data. Survey Methodology, 24(2), 193–201."),
    Reference("franco2019", "Franco, Little, Louis & Slud, 2019",
              "Franco, C., Little, R. J. A., Louis, T. A., & Slud, E. V. (2019). Comparative study of confidence "
              "intervals for proportions in complex sample surveys. Journal of Survey Statistics and Methodology, "
              "7(3), 334–364."),
    Reference("welch1947", "Welch, 1947",
              "Welch, B. L. (1947). The generalization of \"Student's\" problem when several different population "
              "variances are involved. Biometrika, 34(1–2), 28–35."),
    # Judges against humans
    Reference("calderon2025", "Calderon, Reichart & Dror, 2025",
              "Calderon, N., Reichart, R., & Dror, R. (2025). The alternative annotator test for LLM-as-a-judge: "
              "How to statistically justify replacing human annotators with LLMs. In Proceedings of the 63rd "
              "Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers) "
              "(pp. 16051–16081)."),
    Reference("benjamini2001", "Benjamini & Yekutieli, 2001",
              "Benjamini, Y., & Yekutieli, D. (2001). The control of the false discovery rate in multiple testing "
              "under dependency. The Annals of Statistics, 29(4), 1165–1188.", doi="10.1214/aos/1013699998"),
    Reference("holm1979", "Holm, 1979",
              "Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal of "
              "Statistics, 6(2), 65–70."),
    Reference("zrnic2024bootstrap", "Zrnic, 2024",
              "Zrnic, T. (2024). A note on the prediction-powered bootstrap. arXiv:2405.18379.",
              url="https://arxiv.org/abs/2405.18379"),
    # Judge-assisted estimates and weights
    Reference("angelopoulos2023", "Angelopoulos et al., 2023",
              "Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I., & Zrnic, T. (2023). "
              "Prediction-powered inference. Science, 382(6671), 669–674.", doi="10.1126/science.adi6000"),
    Reference("angelopoulos2023ppipp", "Angelopoulos, Duchi & Zrnic, 2023",
              "Angelopoulos, A. N., Duchi, J. C., & Zrnic, T. (2023). PPI++: Efficient prediction-powered "
              "inference. arXiv:2311.01453.", url="https://arxiv.org/abs/2311.01453"),
    Reference("chernozhukov2018", "Chernozhukov et al., 2018",
              "Chernozhukov, V., Chetverikov, D., Demirer, M., Duflo, E., Hansen, C., Newey, W., & Robins, J. (2018). "
              "Double/debiased machine learning for treatment and structural parameters. The Econometrics Journal, "
              "21(1), C1–C68.", doi="10.1111/ectj.12097"),
    Reference("zrnic2024cross", "Zrnic & Candès, 2024",
              "Zrnic, T., & Candès, E. J. (2024). Cross-prediction-powered inference. Proceedings of the National "
              "Academy of Sciences, 121(15), e2322083121.", doi="10.1073/pnas.2322083121"),
    Reference("sarndal1992", "Särndal, Swensson & Wretman, 1992",
              "Särndal, C.-E., Swensson, B., & Wretman, J. (1992). Model assisted survey sampling. Springer."),
    Reference("hajek1971", "Hájek, 1971",
              "Hájek, J. (1971). Comment on \"An essay on the logical foundations of survey sampling, part one\" "
              "by D. Basu. In V. P. Godambe & D. A. Sprott (Eds.), Foundations of statistical inference (p. 236). "
              "Holt, Rinehart and Winston."),
    Reference("breidt2017", "Breidt & Opsomer, 2017",
              "Breidt, F. J., & Opsomer, J. D. (2017). Model-assisted survey estimation with modern prediction "
              "techniques. Statistical Science, 32(2), 190–205.", doi="10.1214/16-STS589"),
    Reference("oehlert1992", "Oehlert, 1992",
              "Oehlert, G. W. (1992). A note on the delta method. The American Statistician, 46(1), 27–29.",
              doi="10.1080/00031305.1992.10475842"),
    # Regression
    Reference("liang1986", "Liang & Zeger, 1986",
              "Liang, K.-Y., & Zeger, S. L. (1986). Longitudinal data analysis using generalized linear models. "
              "Biometrika, 73(1), 13–22.", doi="10.1093/biomet/73.1.13"),
    Reference("cameron2015", "Cameron & Miller, 2015",
              "Cameron, A. C., & Miller, D. L. (2015). A practitioner's guide to cluster-robust inference. Journal "
              "of Human Resources, 50(2), 317–372.", doi="10.3368/jhr.50.2.317"),
    # Software
    Reference("seabold2010", "Seabold & Perktold, 2010",
              "Seabold, S., & Perktold, J. (2010). Statsmodels: Econometric and statistical modeling with Python. "
              "In Proceedings of the 9th Python in Science Conference (pp. 92–96).",
              doi="10.25080/Majora-92bf1922-011"),
    Reference("virtanen2020", "Virtanen et al., 2020",
              "Virtanen, P., Gommers, R., Oliphant, T. E., et al. (2020). SciPy 1.0: Fundamental algorithms for "
              "scientific computing in Python. Nature Methods, 17, 261–272.", doi="10.1038/s41592-019-0686-2"),
    Reference("pedregosa2011", "Pedregosa et al., 2011",
              "Pedregosa, F., Varoquaux, G., Gramfort, A., et al. (2011). Scikit-learn: Machine learning in "
              "Python. Journal of Machine Learning Research, 12, 2825–2830."),
    Reference("castro2017", "Castro, 2017",
              "Castro, S. (2017). Fast Krippendorff: Fast computation of Krippendorff's alpha agreement measure "
              "[Computer software].", url="https://github.com/pln-fing-udelar/fast-krippendorff"),
    Reference("gwet2019irrcac", "Gwet, 2019",
              "Gwet, K. L. (2019). irrCAC: Computing chance-corrected agreement coefficients (CAC) (R package "
              "version 1.0) [Computer software].", doi="10.32614/CRAN.package.irrCAC"),
    Reference("fergadis_irrcac", "Fergadis, n.d.",
              "Fergadis, A. (n.d.). irrCAC: Chance-corrected agreement coefficients (Python port of Gwet's irrCAC, "
              "version 0.4.4) [Computer software].", url="https://github.com/afergadis/irrCAC"),
    # Evidence agreement
    Reference("shankar2024", "Shankar et al., 2024",
              "Shankar, S., Zamfirescu-Pereira, J. D., Hartmann, B., Parameswaran, A. G., & Arawjo, I. (2024). Who "
              "validates the validators? Aligning LLM-assisted evaluation of LLM outputs with human preferences. "
              "Proceedings of the 37th Annual ACM Symposium on User Interface Software and Technology (UIST '24)."),
    Reference("jaccard1912", "Jaccard, 1912",
              "Jaccard, P. (1912). The distribution of the flora in the alpine zone. New Phytologist, 11(2), 37–50."),
]

REFERENCES: dict[str, Reference] = {ref.key: ref for ref in _ALL}


def cite(*keys: str) -> str:
    """Return the in-text citation of one or more works: "(Fleiss, 1971; Gwet, 2014)" without the brackets."""
    return "; ".join(REFERENCES[key].cite for key in keys)


def sort_key(entry: str) -> str:
    """Return the key a reference list sorts an entry by: letters without their accents ("Särndal" as "Sarndal")."""
    return "".join(c for c in unicodedata.normalize("NFKD", entry) if not unicodedata.combining(c)).casefold()


def entries(keys: list[str] | tuple[str, ...]) -> list[dict[str, str]]:
    """Return the reference list of the keys, each once, in alphabetical order of its entry."""
    unique = dict.fromkeys(keys)
    return [REFERENCES[key].as_dict() for key in sorted(unique, key=lambda k: sort_key(REFERENCES[k].entry))]
