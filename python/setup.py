"""pip install --no-build-isolation ./python (from the repository root): builds the compiled part
of sbrank with the project's CMake (only the LibTorch-free libraries under it: -DSB_PYTHON_ONLY=ON)
for the Python that runs pip, and installs the package. Needs what `make deps` installs (a C++17
compiler, CMake, HDF5, LAPACKE/OpenBLAS, pybind11-dev, python3-dev); no network."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = Path(self.build_temp).resolve() / "cmake"
        configure = ["cmake", "-S", str(ROOT), "-B", str(build), "-DSB_PYTHON_ONLY=ON",
                     f"-DSB_PYTHON={sys.executable}", "-DCMAKE_BUILD_TYPE=Release",
                     "-DSB_BUILD_TESTS=OFF", "-DSB_BUILD_BENCH=OFF"]
        jobs = os.environ.get("SB_BUILD_JOBS", str(os.cpu_count() or 1))
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "_sbrank", "-j", jobs],
                       check=True)
        built = sorted((build / "python" / "sbrank").glob("_sbrank*.so"))
        if not built:
            raise RuntimeError(f"no _sbrank module in {build / 'python' / 'sbrank'}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    name="sbrank",
    version="0.1.0",
    description="Numerical rank of log-output matrices (softmax-bottleneck's rank analysis)",
    packages=["sbrank"],
    package_dir={"sbrank": str(Path("sbrank"))},
    ext_modules=[Extension("sbrank._sbrank", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["numpy"],
    zip_safe=False,
)
