"""The n-gram head beside BERT (train/ngram_head.py, train/ngram_model.py): what it hashes, what padding and the
special tokens do to it, its loss, its own optimizer group, and a save/load round trip."""

import pytest
import torch

from train import model
from train.ngram_head import PAD_CHAR, NgramBag, char_batch, char_ids

CLS, SEP, PAD = 2, 3, 0


def _bag(buckets=1 << 12, max_n=3, labels=2):
    torch.manual_seed(0)
    bag = NgramBag(buckets, max_n, labels, [CLS, SEP, PAD])
    torch.nn.init.normal_(bag.bag.weight)   # a trained table: zeros would hide every difference
    return bag


def test_an_example_has_its_1_to_n_grams_and_no_gram_with_a_special_token():
    bag = _bag()
    ids = torch.tensor([[CLS, 10, 11, 12, SEP]])
    grams, keep = bag.ngram_ids(ids, torch.ones_like(ids))
    kept = grams[keep].tolist()
    assert len(kept) == 3 + 2 + 1   # 3 unigrams, 2 bigrams, 1 trigram of the tokens 10 11 12
    assert len(set(kept)) == 6 and all(0 <= g < bag.buckets for g in kept)


def test_order_matters_and_the_same_gram_hashes_the_same_in_every_example():
    bag = _bag()
    ab = torch.tensor([[CLS, 10, 11, SEP]])
    ba = torch.tensor([[CLS, 11, 10, SEP]])
    g_ab, k_ab = bag.ngram_ids(ab, torch.ones_like(ab))
    g_ba, k_ba = bag.ngram_ids(ba, torch.ones_like(ba))
    assert set(g_ab[k_ab].tolist()) != set(g_ba[k_ba].tolist())           # "10 11" is not "11 10"
    assert set(g_ab[k_ab][:2].tolist()) == set(g_ba[k_ba][:2].tolist())   # the unigrams are shared


def test_padding_does_not_change_an_examples_logits():
    bag = _bag()
    short = torch.tensor([[CLS, 10, 11, 12, SEP]])
    padded = torch.tensor([[CLS, 10, 11, 12, SEP, PAD, PAD, PAD]])
    mask = (padded != PAD).long()
    assert torch.allclose(bag(short, torch.ones_like(short)), bag(padded, mask))
    # ... nor does batching it with a longer one
    batch = torch.tensor([[CLS, 10, 11, 12, SEP, PAD, PAD], [CLS, 20, 21, 22, 23, 24, SEP]])
    assert torch.allclose(bag(batch, (batch != PAD).long())[0], bag(short, torch.ones_like(short))[0])


def test_an_example_of_special_tokens_only_gets_zero_logits():
    bag = _bag()
    ids = torch.tensor([[CLS, SEP]])
    assert torch.equal(bag(ids, torch.ones_like(ids)), torch.zeros(1, 2))


def _classifier(buckets=1 << 10, ngram_input="tokens"):
    torch.manual_seed(0)
    return model.build_model("tiny", num_labels=2, vocab_size=100, max_length=32, ngram_buckets=buckets,
                             skip_ids=(CLS, SEP, PAD), ngram_input=ngram_input)


def test_the_head_starts_at_zero_and_each_head_has_its_own_loss():
    net = _classifier().eval()
    assert torch.count_nonzero(net.ngrams.bag.weight) == 0   # at the start the logits are BERT's alone
    torch.nn.init.normal_(net.ngrams.bag.weight)
    ids = torch.tensor([[CLS, 10, 11, 12, SEP], [CLS, 40, 41, SEP, PAD]])
    mask, labels = (ids != PAD).long(), torch.tensor([0, 1])
    out = net(input_ids=ids, attention_mask=mask, labels=labels)
    deep = torch.nn.functional.cross_entropy
    bert = super(type(net), net).forward(input_ids=ids, attention_mask=mask).logits
    wide = net.ngrams(ids, mask)
    assert torch.allclose(out.logits, bert + wide)
    assert torch.allclose(out.loss, deep(bert, labels) + deep(wide, labels))


def test_the_head_has_its_own_learning_rate_and_no_weight_decay():
    net = _classifier()
    groups = model.param_groups(net, 0.01, ngram_lr=0.03)
    assert len(groups) == 3 and groups[2]["params"] == [net.ngrams.bag.weight]
    assert groups[2]["lr"] == 0.03 and groups[2]["weight_decay"] == 0.0
    assert sum(len(g["params"]) for g in groups) == len(list(net.parameters()))
    assert len(model.param_groups(model.build_model("tiny", 2, 100, 32), 0.01)) == 2   # BERT alone: as before


def test_a_saved_classifier_loads_with_its_head_and_computes_the_same(tmp_path):
    net = _classifier().eval()
    torch.nn.init.normal_(net.ngrams.bag.weight)
    net.save_pretrained(tmp_path / "m")
    # The job's default bucket count and input differ from the saved head's: the saved head keeps its shape and
    # what it reads.
    again = model.build_model(str(tmp_path / "m"), num_labels=2, vocab_size=0, max_length=0,
                              ngram_buckets=model.NGRAM_BUCKETS, skip_ids=(CLS, SEP, PAD), ngram_input="chars").eval()
    assert torch.equal(again.ngrams.bag.weight, net.ngrams.bag.weight)
    assert again.config.ngram_buckets == 1 << 10 and again.config.ngram_skip_ids == [PAD, CLS, SEP]
    assert again.config.ngram_input == "tokens" and not model.reads_chars(again)
    # A loaded model is built on the meta device first: the special tokens must still be left out (they were a
    # buffer once, and came back as uninitialised memory).
    assert again.ngrams.skip_ids == (PAD, CLS, SEP)
    ids = torch.tensor([[CLS, 10, 11, 12, SEP], [CLS, 40, 41, SEP, PAD]])
    with torch.no_grad():
        assert torch.allclose(again(input_ids=ids, attention_mask=(ids != PAD).long()).logits,
                              net(input_ids=ids, attention_mask=(ids != PAD).long()).logits)


def test_bert_alone_has_the_fingerprint_it_had_before_the_head(tmp_path):
    from types import SimpleNamespace

    from train import fingerprint

    args = SimpleNamespace(model="tiny", ngram_lr=0.03, **{k: 1 for k in fingerprint.TRAJECTORY_ARGS if k != "ngram_lr"})
    plain = fingerprint.build(args, model.build_model("tiny", 2, 100, 32).config, "d", "ddp", 2, "no")
    assert not any("ngram" in key for key in plain)   # an older checkpoint of BERT alone still resumes
    headed = fingerprint.build(args, _classifier().config, "d", "ddp", 2, "no")
    assert headed["model.ngram_buckets"] == 1 << 10 and headed["ngram_lr"] == 0.03
    assert "model.ngram_input" not in headed   # a token head's checkpoints from before the choice still resume
    # What the head reads is part of the model: a checkpoint of a token head does not resume as a character head.
    chars = fingerprint.build(args, _classifier(ngram_input="chars").config, "d", "ddp", 2, "no")
    assert chars["model.ngram_input"] == "chars" and chars != headed


def test_a_pretrained_bert_without_a_head_gets_a_zero_head(tmp_path):
    plain = model.build_model("tiny", num_labels=2, vocab_size=100, max_length=32)
    plain.save_pretrained(tmp_path / "bert")
    net = model.build_model(str(tmp_path / "bert"), 2, 0, 0, ngram_buckets=1 << 10, skip_ids=(CLS, SEP, PAD))
    assert torch.count_nonzero(net.ngrams.bag.weight) == 0
    assert torch.equal(net.classifier.weight, plain.classifier.weight)


# --- the head over the text's characters (the default) ------------------------------------------------------------

def test_char_ids_are_the_lowercased_text_with_each_whitespace_run_one_space():
    assert char_ids("  Ab\t\n C\x00D  ") == [ord(c) for c in "ab cd"]
    assert char_ids("很好 GOOD", limit=3) == [ord("很"), ord("好"), ord(" ")]
    batch = char_batch(["ab", "很好吃", ""])
    assert batch.tolist() == [[97, 98, PAD_CHAR], [ord("很"), ord("好"), ord("吃")], [PAD_CHAR] * 3]


def _char_inputs():
    ids = torch.tensor([[CLS, 10, 11, 12, SEP], [CLS, 40, 41, SEP, PAD]])
    return ids, (ids != PAD).long(), char_batch(["Great value", "bad"])


def test_a_char_head_reads_the_characters_and_not_the_tokens():
    net = _classifier(ngram_input="chars").eval()
    assert model.reads_chars(net) and net.ngrams.skip_ids == ()   # no token id is special to a character head
    torch.nn.init.normal_(net.ngrams.bag.weight)
    ids, mask, chars = _char_inputs()
    labels = torch.tensor([0, 1])
    out = net(input_ids=ids, attention_mask=mask, char_ids=chars, labels=labels)
    bert = super(type(net), net).forward(input_ids=ids, attention_mask=mask).logits
    wide = net.ngrams(chars, chars != PAD_CHAR)
    assert torch.allclose(out.logits, bert + wide)
    ce = torch.nn.functional.cross_entropy
    assert torch.allclose(out.loss, ce(bert, labels) + ce(wide, labels))
    # Other text, same tokens: other logits (the head reads the text, whatever the tokenizer made of it).
    other = net(input_ids=ids, attention_mask=mask, char_ids=char_batch(["Poor value", "bad!"])).logits
    assert not torch.allclose(other, out.logits)
    # Padding the characters of a batch does not change an example's logits.
    longer = torch.cat([chars, torch.full((2, 7), PAD_CHAR)], 1)
    assert torch.allclose(net(input_ids=ids, attention_mask=mask, char_ids=longer).logits, out.logits)


def test_a_char_head_without_its_characters_is_an_error_not_a_silent_bert():
    net = _classifier(ngram_input="chars").eval()
    ids, mask, _ = _char_inputs()
    with pytest.raises(ValueError, match="char_ids=train.ngram_head.char_batch"):
        net(input_ids=ids, attention_mask=mask)


def test_a_saved_char_head_loads_reading_characters(tmp_path):
    net = _classifier(ngram_input="chars").eval()
    torch.nn.init.normal_(net.ngrams.bag.weight)
    net.save_pretrained(tmp_path / "m")
    again = model.build_model(str(tmp_path / "m"), 2, 0, 0, ngram_buckets=model.NGRAM_BUCKETS,
                              skip_ids=(CLS, SEP, PAD), ngram_input="tokens").eval()
    assert again.config.ngram_input == "chars" and again.config.ngram_skip_ids == [] and model.reads_chars(again)
    ids, mask, chars = _char_inputs()
    with torch.no_grad():
        assert torch.allclose(again(input_ids=ids, attention_mask=mask, char_ids=chars).logits,
                              net(input_ids=ids, attention_mask=mask, char_ids=chars).logits)


def test_a_head_saved_before_the_choice_existed_reads_tokens(tmp_path):
    net = _classifier(ngram_input="tokens").eval()
    del net.config.ngram_input   # what a model saved by the token-only head holds
    net.save_pretrained(tmp_path / "m")
    again = model.build_model(str(tmp_path / "m"), 2, 0, 0, ngram_buckets=model.NGRAM_BUCKETS,
                              skip_ids=(CLS, SEP, PAD))
    assert again.config.ngram_input == "tokens" and again.ngrams.skip_ids == (PAD, CLS, SEP)


def test_a_text_without_characters_gets_zero_logits_from_the_head():
    net = _classifier(ngram_input="chars").eval()
    torch.nn.init.normal_(net.ngrams.bag.weight)
    empty = torch.zeros((2, 0), dtype=torch.long)   # what the precision check's sample of an empty review holds
    assert torch.equal(net.ngrams(empty, empty != PAD_CHAR), torch.zeros(2, 2))
    assert torch.equal(net.ngrams(char_batch(["", " "]), char_batch(["", " "]) != PAD_CHAR), torch.zeros(2, 2))


def test_bert_alone_from_a_saved_headed_model_is_bert_alone(tmp_path):
    net = _classifier(ngram_input="chars")
    net.config.ngram_mix = [0.5, 2.0]
    net.save_pretrained(tmp_path / "m")
    plain = model.build_model(str(tmp_path / "m"), 2, 0, 0, ngram_buckets=0)
    assert not model.has_head(plain) and not model.reads_chars(plain)   # batches carry no characters for it
    assert not plain.config.ngram_buckets   # nor does its fingerprint count a head
