"""The Python package: `python3 -m pip install .` from a clone builds the
module with the project's CMake (module only, Release) and installs it
inside the `kafkalog` package, with kafkalog.load(conn),
kafkalog.loadable_path() and the `kafkalog` command.

setup.py and no pyproject.toml on purpose: pip then builds with the
setuptools of the environment it installs into (Debian's python3-setuptools,
or the one python3 -m venv puts in a venv) instead of downloading one into
an isolated build environment, so an install needs no package index.  The
build needs cmake, a C compiler and the -dev packages of tests/setup.sh."""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

here = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(here, "CMakeLists.txt")) as f:
        for line in f:
            if line.startswith("project(kafkalog VERSION "):
                return line.split()[2]
    raise RuntimeError("no project version in CMakeLists.txt")


class BuildModule(build_py):
    """build_py, then kafkalog.so and the command's script into the package."""

    def run(self):
        super().run()
        build = os.path.join(os.path.abspath(self.get_finalized_command("build").build_temp), "cmake")
        if not shutil.which("cmake"):
            raise SystemExit("kafkalog: building needs cmake and the packages tests/setup.sh installs "
                             "(Debian: apt-get install cmake gcc pkg-config libsqlite3-dev zlib1g-dev "
                             "liblz4-dev libzstd-dev libsnappy-dev libxxhash-dev)")
        subprocess.check_call(["cmake", "-S", here, "-B", build, "-DBUILD_TESTING=OFF",
                               "-DCMAKE_BUILD_TYPE=Release"], stdout=subprocess.DEVNULL)
        subprocess.check_call(["cmake", "--build", build, "--target", "kafkalog", "-j", str(os.cpu_count() or 1)],
                              stdout=subprocess.DEVNULL)
        dest = os.path.join(self.build_lib, "kafkalog")
        os.makedirs(dest, exist_ok=True)
        shutil.copy2(os.path.join(build, "kafkalog.so"), os.path.join(dest, "kafkalog.so"))
        shutil.copy2(os.path.join(here, "cli", "kafkalog"), os.path.join(dest, "kafkalog.sh"))


class BinaryDistribution(Distribution):
    """The package holds a compiled module: its wheel is for this platform."""

    def has_ext_modules(self):
        return True


setup(
    name="kafkalog",
    version=version(),
    description="SQLite extension that reads Apache Kafka partition and log directories as tables",
    packages=["kafkalog"],
    package_dir={"kafkalog": "python/kafkalog"},
    python_requires=">=3.7",
    cmdclass={"build_py": BuildModule},
    distclass=BinaryDistribution,
    entry_points={"console_scripts": ["kafkalog = kafkalog.__main__:main"]},
    options={"build": {"build_base": "build-python"}},  # not CMake's build/
    zip_safe=False,
)
