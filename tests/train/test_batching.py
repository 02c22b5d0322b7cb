import torch

from train.batching import BucketBatchSampler, Collate


def test_epoch_order_is_a_function_of_seed_and_epoch():
    lengths = torch.randint(1, 100, (103,))
    a, b = BucketBatchSampler(lengths, 8, seed=1), BucketBatchSampler(lengths, 8, seed=1)
    assert a.batches(0) == b.batches(0) and a.batches(0) != a.batches(1)
    assert len(a) == 12 and all(len(x) == 8 for x in a.batches(0))
    flat = [i for batch in a.batches(0) for i in batch]
    assert len(set(flat)) == len(flat) == 96  # each example at most once; the remainder is dropped


def test_bucketing_cuts_padding():
    lengths = torch.randint(1, 128, (4096,), generator=torch.Generator().manual_seed(0))

    def padded(sampler):
        return sum(len(b) * int(lengths[b].max()) for b in sampler.batches(0))

    bucketed, plain = BucketBatchSampler(lengths, 32, 0), BucketBatchSampler(lengths, 32, 0, bucketing=False)
    assert padded(bucketed) < 0.75 * padded(plain)


def test_collate_pads_to_longest_in_batch():
    batch = Collate(pad_id=0)([(torch.tensor([5, 6, 7], dtype=torch.int32), torch.tensor(1)),
                               (torch.tensor([8], dtype=torch.int32), torch.tensor(0))])
    assert batch["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["labels"].tolist() == [1, 0]
    assert "char_ids" not in batch   # BERT alone, or a head over tokens: no characters


def test_collate_pads_the_characters_to_the_longest_text_of_the_batch():
    batch = Collate(pad_id=3)([(torch.tensor([5, 6], dtype=torch.int32), torch.tensor(1),
                                torch.tensor([97], dtype=torch.int32)),
                               (torch.tensor([8], dtype=torch.int32), torch.tensor(0),
                                torch.tensor([98, 99, 100], dtype=torch.int32))])
    assert batch["input_ids"].tolist() == [[5, 6], [8, 3]]
    assert batch["char_ids"].tolist() == [[97, 0, 0], [98, 99, 100]] and batch["char_ids"].dtype == torch.long
