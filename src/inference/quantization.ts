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
