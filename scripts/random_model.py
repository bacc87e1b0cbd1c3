"""Write a small llama-architecture GGUF with random weights that llama.cpp's ``llama-server`` serves: a model that
speaks the wire protocol perfectly and says nothing, the candidate a race must never crown.

The tokenizer is the real Qwen2 byte-level BPE (the vocab-only test file ``models/ggml-vocab-qwen2.gguf`` of the
llama.cpp tree, no weights in it) and the chat template Qwen2.5-7B-Instruct's (``models/templates/``), so prompt token
counts are a real tokenizer's. The weights are drawn at random, except one residual dimension held constant and kept
out of the random layers: through the output head it gives the end-of-turn token a moderate logit (replies end after a
few dozen tokens at the server's default sampling, instead of always running to ``max_tokens``) and every other special
token a very low one (no stray control tokens in the text).

Written for gradebench; the idea of a random-weights model on the Qwen2 vocabulary comes from an earlier local tool of
the project. Needs numpy and gguf-py (``PYTHONPATH=<llama.cpp>/gguf-py``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gguf
import numpy as np

END_OF_TURN = 151645  # <|im_end|>, the chat template's end of a turn
END_OF_TEXT = 151643  # <|endoftext|>, the first special token of the Qwen2 vocabulary
CONSTANT = 0  # the residual dimension held at 1 for every token


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-cpp-dir", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--n-embd", type=int, default=64)
    parser.add_argument("--n-layer", type=int, default=2)
    parser.add_argument("--eos-logit", type=float, default=7.0, help="the end-of-turn logit (higher: shorter replies)")
    args = parser.parse_args()

    vocab = gguf.GGUFReader(args.llama_cpp_dir / "models" / "ggml-vocab-qwen2.gguf")
    tokens = list(vocab.fields["tokenizer.ggml.tokens"].contents())
    token_types = [int(t) for t in vocab.fields["tokenizer.ggml.token_type"].contents()]
    merges = list(vocab.fields["tokenizer.ggml.merges"].contents())
    template = (args.llama_cpp_dir / "models" / "templates" / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()
    n_vocab, width, heads, kv_heads, ffn = len(tokens), args.n_embd, 4, 2, 2 * args.n_embd
    head_dim = width // heads
    rng = np.random.default_rng(args.seed)

    embedding = rng.standard_normal((n_vocab, width)).astype(np.float32)
    embedding[:, CONSTANT] = 1.0
    # ordinary tokens: logits about N(0, 2^2); the constant dimension carries the specials' logits
    output = (rng.standard_normal((n_vocab, width)) * 2.0 / np.sqrt(width - 1)).astype(np.float32)
    output[:, CONSTANT] = 0.0
    output[END_OF_TEXT:, :] = 0.0
    output[END_OF_TEXT:, CONSTANT] = -30.0
    output[END_OF_TURN, CONSTANT] = args.eos_logit

    writer = gguf.GGUFWriter(str(args.out), "llama")
    writer.add_name("random weights, Qwen2 tokenizer and Qwen2.5 chat template")
    writer.add_context_length(32768)
    writer.add_embedding_length(width)
    writer.add_block_count(args.n_layer)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(1000000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(int(gguf.LlamaFileType.MOSTLY_F16))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(token_types)
    writer.add_token_merges(merges)
    writer.add_eos_token_id(END_OF_TURN)
    writer.add_bos_token_id(END_OF_TEXT)
    writer.add_pad_token_id(END_OF_TEXT)
    writer.add_add_bos_token(False)
    writer.add_chat_template(template)
    writer.add_tensor("token_embd.weight", embedding.astype(np.float16))
    writer.add_tensor("output_norm.weight", np.ones(width, dtype=np.float32))
    writer.add_tensor("output.weight", output.astype(np.float16))

    def weights(*shape: int, into_residual: bool = False, from_residual: bool = False) -> np.ndarray:
        w = (rng.standard_normal(shape) * 0.05).astype(np.float32)
        if into_residual:  # the layers never write the constant dimension ...
            w[CONSTANT, :] = 0.0
        if from_residual:  # ... nor read it
            w[:, CONSTANT] = 0.0
        return w

    for layer in range(args.n_layer):
        prefix = f"blk.{layer}."
        writer.add_tensor(prefix + "attn_norm.weight", np.ones(width, dtype=np.float32))
        writer.add_tensor(prefix + "attn_q.weight", weights(width, width, from_residual=True))
        writer.add_tensor(prefix + "attn_k.weight", weights(kv_heads * head_dim, width, from_residual=True))
        writer.add_tensor(prefix + "attn_v.weight", weights(kv_heads * head_dim, width, from_residual=True))
        writer.add_tensor(prefix + "attn_output.weight", weights(width, width, into_residual=True))
        writer.add_tensor(prefix + "ffn_norm.weight", np.ones(width, dtype=np.float32))
        writer.add_tensor(prefix + "ffn_gate.weight", weights(ffn, width, from_residual=True))
        writer.add_tensor(prefix + "ffn_up.weight", weights(ffn, width, from_residual=True))
        writer.add_tensor(prefix + "ffn_down.weight", weights(width, ffn, into_residual=True))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB, vocab {n_vocab}, width {width})")


if __name__ == "__main__":
    main()
