"""Finding the library: build tree, installed library, $AMPSIM_LIB; an
ImportError that says `make` when there is none."""
import ctypes
import os
import shutil
import subprocess
import sys
import unittest

from support import PYDIR, ROOT, ampsim, tmpdir


def installed_library():
    """The name under which the dynamic loader finds an installed libampsim,
    or None. Asked in a fresh process: this one has the build tree's library
    loaded already, and dlopen matches a loaded library by its SONAME."""
    env = {k: v for k, v in os.environ.items() if k not in ("AMPSIM_LIB", "LD_LIBRARY_PATH")}
    for name in ("libampsim.so.0", "libampsim.so"):
        p = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL(%r)" % name],
                           capture_output=True, env=env)
        if p.returncode == 0:
            return name
    return None


class TestImport(unittest.TestCase):
    def run_python(self, pkgroot, env_extra):
        env = {k: v for k, v in os.environ.items() if k not in ("AMPSIM_LIB", "LD_LIBRARY_PATH")}
        env["PYTHONPATH"] = pkgroot
        env.update(env_extra)
        code = "import ampsim, sys; sys.stdout.write(ampsim.library_path)"
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                              cwd=pkgroot)

    def copy_package(self):
        root = os.path.join(tmpdir(self), "a", "b")
        shutil.copytree(os.path.join(PYDIR, "ampsim"), os.path.join(root, "ampsim"),
                        ignore=shutil.ignore_patterns("__pycache__", "torch"))
        return root

    def test_build_tree_first(self):
        built = os.path.join(ROOT, "build", "libampsim.so")
        self.assertTrue(os.path.exists(built), "run `make` first")
        self.assertEqual(os.path.realpath(ampsim.library_path), os.path.realpath(built))

    def test_installed_layout(self):
        # `make install` layout: PREFIX/lib/python3/dist-packages/ampsim finds PREFIX/lib/libampsim.so
        prefix = tmpdir(self)
        pkgroot = os.path.join(prefix, "lib", "python3", "dist-packages")
        shutil.copytree(os.path.join(PYDIR, "ampsim"), os.path.join(pkgroot, "ampsim"),
                        ignore=shutil.ignore_patterns("__pycache__", "torch"))
        lib = os.path.join(prefix, "lib", "libampsim.so")
        shutil.copy(os.path.join(ROOT, "build", "libampsim.so"), lib)
        p = self.run_python(pkgroot, {})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, lib)

    def test_missing_library_and_env_fallback(self):
        root = self.copy_package()
        p = self.run_python(root, {})
        inst = installed_library()
        if inst is None:
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("ImportError", p.stderr)
            self.assertIn("make", p.stderr)
            built = os.path.join(ROOT, "build", "libampsim.so")
            p = self.run_python(root, {"AMPSIM_LIB": built})
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout, built)
            p = self.run_python(root, {"AMPSIM_LIB": os.path.join(root, "nothing.so")})
            self.assertIn("ImportError", p.stderr)
        else:  # an installed library is found before $AMPSIM_LIB
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("libampsim", p.stdout)


if __name__ == "__main__":
    unittest.main()
