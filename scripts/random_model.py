"""Write a small llama-architecture GGUF with random weights that llama.cpp's ``llama-server`` serves: a model that
speaks the wire protocol perfectly and says nothing, the candidate a race must never crown.

The tokenizer is the real Qwen2 byte-level BPE (the vocab-only test file ``models/ggml-vocab-qwen2.gguf`` of the
llama.cpp tree, no weights in it) and the chat template Qwen2.5-7B-Instruct's (``models/templates/``), so prompt token
counts are a real tokenizer's. The weights are drawn at random, except two residual dimensions kept out of the random
layers. One is held constant: through the output head it gives the end-of-turn token a moderate logit (replies end
after a few dozen tokens at the server's default sampling, instead of always running to ``max_tokens``) and every other
special token a very low one (no stray control tokens in the text). The other is -1 on the token "\n" and 1 on every
other: it gives ``<tool_call>`` (added at its Qwen2.5 id) the top logit right after a newline, so every reply opens with
one — the chat template's first line is "assistant\n" — and a third, 1 on ``<tool_call>`` and -1 on ``</tool_call>``,
puts "\n" after the one and the end of the turn after the other. With ``tools`` in the request, llama.cpp's grammar
then takes over and the answer is a tool call valid for the schema; without, the text is ``<tool_call>`` and gibberish.

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
TOOL_CALL, TOOL_CALL_END = 151657, 151658  # <tool_call> and </tool_call> at their Qwen2.5 ids
NEWLINE = 198  # "\n" in the byte-level vocabulary
CONSTANT = 0  # the residual dimension held at 1 for every token
AFTER_NEWLINE = 1  # the residual dimension that is -1 on "\n", 1 elsewhere
AFTER_TOOL_CALL = 2  # the residual dimension that is 1 on <tool_call>, -1 on </tool_call>, 0 elsewhere
RESERVED = 3  # dimensions 0 to 2 are kept out of the random layers


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
    for token_id, text in ((TOOL_CALL, "<tool_call>"), (TOOL_CALL_END, "</tool_call>")):
        tokens[token_id], token_types[token_id] = text, int(gguf.TokenType.USER_DEFINED)
    template = (args.llama_cpp_dir / "models" / "templates" / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()
    n_vocab, width, heads, kv_heads, ffn = len(tokens), args.n_embd, 4, 2, 2 * args.n_embd
    head_dim = width // heads
    rng = np.random.default_rng(args.seed)

    embedding = rng.standard_normal((n_vocab, width)).astype(np.float32)
    embedding[:, CONSTANT] = 1.0
    embedding[:, AFTER_NEWLINE] = 1.0
    embedding[NEWLINE, AFTER_NEWLINE] = -1.0
    embedding[:, AFTER_TOOL_CALL] = 0.0
    embedding[TOOL_CALL, AFTER_TOOL_CALL] = 1.0
    embedding[TOOL_CALL_END, AFTER_TOOL_CALL] = -1.0
    # ordinary tokens: logits about N(0, 2^2); the reserved dimensions carry the specials' logits
    output = (rng.standard_normal((n_vocab, width)) * 2.0 / np.sqrt(width - RESERVED)).astype(np.float32)
    output[:, :RESERVED] = 0.0
    output[END_OF_TEXT:, :] = 0.0
    output[END_OF_TEXT:, CONSTANT] = -30.0
    output[END_OF_TURN, CONSTANT] = args.eos_logit
    output[TOOL_CALL, [CONSTANT, AFTER_NEWLINE]] = (-2.0, -14.0)  # after "\n": +12, above any other; elsewhere: -16
    output[TOOL_CALL_END, [CONSTANT, AFTER_NEWLINE]] = (-6.0, -14.0)  # likely where llama.cpp's grammar allows it
    output[NEWLINE, AFTER_TOOL_CALL] = 20.0  # "<tool_call>\n": the template's opening, which starts the grammar
    output[END_OF_TURN, AFTER_TOOL_CALL] = -30.0  # and the turn ends right after "</tool_call>": one call a reply
    # tokens of whitespace alone but "\n" are unlikely: the JSON of a tool call stays compact
    blank = [
        i
        for i, t in enumerate(tokens[:END_OF_TEXT])
        if t and set(t) <= set("\u0120\u010a\u0109\u010d") and i != NEWLINE
    ]
    output[blank, CONSTANT] = -8.0

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
        if into_residual:  # the layers never write the reserved dimensions ...
            w[:RESERVED, :] = 0.0
        if from_residual:  # ... nor read them
            w[:, :RESERVED] = 0.0
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
