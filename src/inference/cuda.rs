//! The CUDA libraries the CUDA execution provider needs, loaded from a configured folder before
//! the provider is registered, so `SERVICE_DEVICE=cuda` works without a system CUDA install and a
//! missing piece is a start-up error that names it instead of a failure deep inside ONNX Runtime.
//!
//! Each library is opened with `dlopen(RTLD_NOW | RTLD_GLOBAL)` and never closed: when ONNX
//! Runtime later opens `libonnxruntime_providers_cuda.so`, the dynamic loader finds its
//! dependencies already loaded (it matches them by soname), whatever `LD_LIBRARY_PATH` says.

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::path::{Path, PathBuf};

/// What `libonnxruntime_providers_cuda.so` of onnxruntime-gpu 1.31.1 links against
/// (`readelf -d`: NEEDED), each after the ones it needs. cuDNN 9, cuFFT 12 and NVRTC are opened
/// lazily by operators the token classifiers do not use, so they are not required here.
pub const CUDA_LIBRARIES: &[&str] = &[
    "libcudart.so.13",
    "libcublasLt.so.13",
    "libcublas.so.13",
    "libcurand.so.10",
];

/// The NVIDIA driver's library: it comes with the driver, never from a wheel.
pub const DRIVER_LIBRARY: &str = "libcuda.so.1";

/// Where the CUDA libraries come from (`SERVICE_CUDA_LIB_DIR`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CudaLibDir {
    /// The dynamic loader's own search path (`system`): a CUDA install or container image.
    System,
    /// One folder holding every library of [`CUDA_LIBRARIES`].
    Folder(PathBuf),
}

impl CudaLibDir {
    pub fn from_setting(dir: &Path) -> Self {
        if dir.as_os_str() == "system" {
            Self::System
        } else {
            Self::Folder(dir.to_path_buf())
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::System => "the dynamic loader's search path".into(),
            Self::Folder(dir) => dir.display().to_string(),
        }
    }
}

/// Why the CUDA device cannot be used. Messages name the library or setting to fix.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error(
        "SERVICE_DEVICE=cuda: {library} cannot be loaded from {dir} ({reason}); run \
         scripts/fetch-assets --gpu, or point SERVICE_CUDA_LIB_DIR at a folder holding {all} \
         (`system`: the dynamic loader's search path)"
    )]
    Library {
        library: &'static str,
        dir: String,
        reason: String,
        all: String,
    },
    #[error(
        "SERVICE_DEVICE=cuda: the NVIDIA driver library {DRIVER_LIBRARY} cannot be loaded \
         ({reason}); this needs an NVIDIA GPU with its driver (in a container: --gpus)"
    )]
    Driver { reason: String },
    #[error("SERVICE_DEVICE=cuda: the CUDA driver failed {call} with error {code}{hint}")]
    DriverCall {
        call: &'static str,
        code: c_int,
        hint: &'static str,
    },
    #[error(
        "SERVICE_DEVICE=cuda:{id}: the driver sees {count} CUDA device(s); set SERVICE_DEVICE or \
         SERVICE_CUDA_DEVICE_ID to one of 0..{count}"
    )]
    NoSuchDevice { id: i32, count: c_int },
}

/// Loads the CUDA libraries and the driver, and checks that device `device_id` exists. Safe to
/// call more than once (the loader counts references; the libraries stay for the process).
pub fn load(dir: &CudaLibDir, device_id: i32) -> Result<(), CudaError> {
    for &library in CUDA_LIBRARIES {
        let path = match dir {
            CudaLibDir::System => PathBuf::from(library),
            CudaLibDir::Folder(folder) => folder.join(library),
        };
        if let CudaLibDir::Folder(_) = dir
            && !path.is_file()
        {
            return Err(library_error(library, dir, "no such file".into()));
        }
        open(&path).map_err(|reason| library_error(library, dir, reason))?;
    }
    let driver = open(Path::new(DRIVER_LIBRARY)).map_err(|reason| CudaError::Driver { reason })?;
    check_device(driver, device_id)
}

fn library_error(library: &'static str, dir: &CudaLibDir, reason: String) -> CudaError {
    CudaError::Library {
        library,
        dir: dir.describe(),
        reason,
        all: CUDA_LIBRARIES.join(", "),
    }
}

/// `dlopen(path, RTLD_NOW | RTLD_GLOBAL)`; the handle is kept for the life of the process.
fn open(path: &Path) -> Result<*mut c_void, String> {
    let name = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| "the path holds a NUL byte".to_string())?;
    // SAFETY: `name` is a valid C string; dlopen runs the library's initialisers, which is
    // what loading it means. The handle is deliberately never closed.
    let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if handle.is_null() {
        return Err(last_dl_error());
    }
    Ok(handle)
}

fn last_dl_error() -> String {
    // SAFETY: dlerror returns NULL or a C string valid until the next dl* call on this thread.
    let msg = unsafe { libc::dlerror() };
    if msg.is_null() {
        "unknown dynamic loader error".into()
    } else {
        // SAFETY: non-null, NUL-terminated, copied out at once.
        unsafe { CStr::from_ptr(msg) }
            .to_string_lossy()
            .into_owned()
    }
}

type CuInit = unsafe extern "C" fn(c_uint) -> c_int;
type CuDeviceGetCount = unsafe extern "C" fn(*mut c_int) -> c_int;

/// `cuInit` and `cuDeviceGetCount` through the driver library just loaded.
fn check_device(driver: *mut c_void, device_id: i32) -> Result<(), CudaError> {
    let symbol = |name: &CStr| {
        // SAFETY: `driver` is a live handle from dlopen; `name` is a C string.
        let f = unsafe { libc::dlsym(driver, name.as_ptr() as *const c_char) };
        (!f.is_null())
            .then_some(f)
            .ok_or_else(|| CudaError::Driver {
                reason: format!("it has no {}", name.to_string_lossy()),
            })
    };
    // SAFETY: the CUDA driver API's documented signatures.
    let cu_init: CuInit = unsafe { std::mem::transmute(symbol(c"cuInit")?) };
    let cu_count: CuDeviceGetCount = unsafe { std::mem::transmute(symbol(c"cuDeviceGetCount")?) };
    // SAFETY: plain driver calls; `count` outlives the call.
    let code = unsafe { cu_init(0) };
    if code != 0 {
        return Err(CudaError::DriverCall {
            call: "cuInit",
            code,
            hint: match code {
                100 => " (no CUDA-capable device is visible)",
                35 | 803 => " (the driver is older than CUDA 13 needs: 580 or newer)",
                _ => "",
            },
        });
    }
    let mut count: c_int = 0;
    let code = unsafe { cu_count(&mut count) };
    if code != 0 {
        return Err(CudaError::DriverCall {
            call: "cuDeviceGetCount",
            code,
            hint: "",
        });
    }
    if device_id < 0 || device_id >= count {
        return Err(CudaError::NoSuchDevice {
            id: device_id,
            count,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_folder_names_the_first_library_and_the_setting() {
        let dir = CudaLibDir::from_setting(Path::new("/nonexistent/cuda/lib"));
        let err = load(&dir, 0).expect_err("nothing to load").to_string();
        assert!(err.contains("libcudart.so.13"), "{err}");
        assert!(err.contains("/nonexistent/cuda/lib"), "{err}");
        assert!(err.contains("SERVICE_CUDA_LIB_DIR"), "{err}");
        assert!(err.contains("scripts/fetch-assets --gpu"), "{err}");
    }

    #[test]
    fn a_library_that_is_not_one_is_reported_with_the_loader_reason() {
        let dir = std::env::temp_dir().join(format!("phiflow-cuda-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("libcudart.so.13"), b"not an ELF file").unwrap();
        let err = load(&CudaLibDir::Folder(dir.clone()), 0)
            .expect_err("not a library")
            .to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("libcudart.so.13 cannot be loaded"), "{err}");
        // The loader's own words, e.g. "invalid ELF header" or "file too short".
        assert!(err.contains("libcudart.so.13:"), "{err}");
    }

    #[test]
    fn system_means_the_loader_path() {
        assert_eq!(
            CudaLibDir::from_setting(Path::new("system")),
            CudaLibDir::System
        );
        assert_eq!(
            CudaLibDir::from_setting(Path::new(".assets/cuda/lib")),
            CudaLibDir::Folder(".assets/cuda/lib".into())
        );
    }
}
