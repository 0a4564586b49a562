"""DP models: Gibbs-posterior logistic regression (:mod:`.gibbs_logistic`) and the Langevin
utilities and secure Gaussian noise its samplers use (:mod:`.langevin`)."""
