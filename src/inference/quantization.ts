/** TGI's `--quantize` choices. */
export enum TgiQuantization {
  AWQ = 'awq',
  COMPRESSED_TENSORS = 'compressed-tensors',
  EETQ = 'eetq',
  EXL2 = 'exl2',
  GPTQ = 'gptq',
  MARLIN = 'marlin',
  BITSANDBYTES = 'bitsandbytes',
  BITSANDBYTES_NF4 = 'bitsandbytes-nf4',
  BITSANDBYTES_FP4 = 'bitsandbytes-fp4',
  FP8 = 'fp8',
}

/**
 * vLLM's `--quantization` choices that every release since v0.10 accepts
 * (vllm/model_executor/layers/quantization/__init__.py, `QuantizationMethods`). Most checkpoints
 * declare their method in config.json and need no flag.
 */
export enum VllmQuantization {
  AWQ = 'awq',
  AWQ_MARLIN = 'awq_marlin',
  GPTQ = 'gptq',
  GPTQ_MARLIN = 'gptq_marlin',
  FP8 = 'fp8',
  FBGEMM_FP8 = 'fbgemm_fp8',
  MODELOPT = 'modelopt',
  MODELOPT_FP4 = 'modelopt_fp4',
  BITSANDBYTES = 'bitsandbytes',
  COMPRESSED_TENSORS = 'compressed-tensors',
  GGUF = 'gguf',
  EXPERTS_INT8 = 'experts_int8',
  MOE_WNA16 = 'moe_wna16',
  TORCHAO = 'torchao',
  QUARK = 'quark',
}

/** SGLang's `--quantization` choices (python/sglang/srt/server_args.py, `QUANTIZATION_CHOICES`). */
export enum SglangQuantization {
  AWQ = 'awq',
  AWQ_MARLIN = 'awq_marlin',
  FP8 = 'fp8',
  GPTQ = 'gptq',
  GPTQ_MARLIN = 'gptq_marlin',
  MARLIN = 'marlin',
  BITSANDBYTES = 'bitsandbytes',
  GGUF = 'gguf',
  MODELOPT = 'modelopt',
  MODELOPT_FP8 = 'modelopt_fp8',
  MODELOPT_FP4 = 'modelopt_fp4',
  W8A8_INT8 = 'w8a8_int8',
  W8A8_FP8 = 'w8a8_fp8',
  MOE_WNA16 = 'moe_wna16',
}
