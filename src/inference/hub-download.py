# The model-download init container of the vLLM and SGLang services: argv[1] is the model,
# argv[2] the revision ('' for the default branch). It fills the cache the server then reads
# offline, with what the engine will load and nothing else.
#
# vLLM and SGLang load one weight format: the first of *.safetensors, *.bin, *.pt that the
# repository's top level has (download_weights_from_hf in vllm/model_executor/model_loader/
# weight_utils.py, and SGLang's copy of it). Many repositories ship more than one (safetensors
# next to pytorch_model-*.bin, flax, TF, ONNX or GGUF files): all of them would fill the cache to
# several times modelSize. Meta's original/ holds duplicate consolidated checkpoints neither
# engine reads (vLLM's default ignore_patterns).
import fnmatch
import sys

from huggingface_hub import HfApi, snapshot_download

model = sys.argv[1]
revision = sys.argv[2] or None
LOADED = ["*.safetensors", "*.bin", "*.pt"]
OTHER_WEIGHTS = ["*.pth", "*.msgpack", "*.h5", "*.onnx", "*.onnx_data", "*.ot", "*.gguf", "*.tflite", "*.mlmodel"]

top = [f for f in HfApi().list_repo_files(model, revision=revision) if "/" not in f]
chosen = next((p for p in LOADED if fnmatch.filter(top, p)), None)
# With no loaded format at the top level the engine looks for all three, and so does the download.
ignore = ["original/*"] + [p for p in LOADED if chosen and p != chosen] + OTHER_WEIGHTS
print(f"model-download: {model}@{revision or 'main'}: weights {chosen or 'none at the top level'}, skipping {' '.join(ignore)}", flush=True)
snapshot_download(model, revision=revision, ignore_patterns=ignore)
print("model-download: done", flush=True)
