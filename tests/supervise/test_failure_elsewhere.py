"""SSH failure summaries take a collective refusal's explanation from the streamed node logs (the ranks' own
teed files stay on the hosts)."""

from launcher.supervise.failure import TRAIN_EXIT_CODES, Failure, explained_elsewhere

NODE0 = "[node0/rank0] step 3/10\n[node0/rank0] resume refused: checkpoint of another run (fingerprint differs)\n"
NODE1 = "[node1/rank1] step 3/10\n"


def _silent_rank1(code=5, words="step 3/10"):
    return Failure(node=1, host="n2", rank=1, code=code, meaning=TRAIN_EXIT_CODES.get(code, ""), last_line=words)


def test_a_silent_rank_gets_the_main_process_explanation_named_as_its():
    f = explained_elsewhere(_silent_rank1(), TRAIN_EXIT_CODES, [NODE0, NODE1])
    assert f.last_line == "rank 0 said: resume refused: checkpoint of another run (fingerprint differs)"
    assert (f.node, f.host, f.rank, f.code) == (1, "n2", 1, 5)


def test_a_rank_that_explained_itself_keeps_its_words():
    own = "resume refused: no checkpoint in out/"
    f = explained_elsewhere(_silent_rank1(words=own), TRAIN_EXIT_CODES, [NODE0, NODE1])
    assert f.last_line == own


def test_unknown_codes_and_unexplained_refusals_stay_as_they_are():
    assert explained_elsewhere(_silent_rank1(code=9), TRAIN_EXIT_CODES, [NODE0, NODE1]).last_line == "step 3/10"
    assert explained_elsewhere(_silent_rank1(code=4), TRAIN_EXIT_CODES, [NODE0, NODE1]).last_line == "step 3/10"
    assert explained_elsewhere(_silent_rank1(), {}, [NODE0, NODE1]).last_line == "step 3/10"
