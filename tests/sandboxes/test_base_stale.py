"""A base image built before a package joined ``BASE_PACKAGES`` is stale: it is labelled
with the packages it was built with, and an image whose label is missing or lacks one is
built again. Real (tiny) images in the real engine; no debootstrap."""

from __future__ import annotations

import contextlib
import io
import tarfile
import uuid
from collections.abc import Iterator

import pytest
from docker.errors import ImageNotFound

from portwright.sandboxes.buildlock import build_once
from portwright.sandboxes.images import (
    BASE_PACKAGES,
    LABEL_PACKAGES,
    base_image_stale,
    build_base_image,
)
from tests.conftest import docker_engine_running

pytestmark = [pytest.mark.docker,
              pytest.mark.skipif(not docker_engine_running(), reason="no Docker engine answers")]


def _archive() -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as archive:
        info = tarfile.TarInfo("hello")
        body = f"{uuid.uuid4()}\n".encode()  # every image its own id
        info.size = len(body)
        archive.addfile(info, io.BytesIO(body))
    return data.getvalue()


MADE: list[str] = []
"""Ids of the images the tests made (a tag moved to a new image leaves the old one)."""


@pytest.fixture
def tag() -> Iterator[str]:
    from portwright.sandboxes.engine import docker_client

    name = f"portwright-test/base-stale:{uuid.uuid4().hex[:12]}"
    yield name
    client = docker_client()
    try:
        for image in [name, *MADE]:
            with contextlib.suppress(ImageNotFound):  # removed with its tag, or never made
                client.images.remove(image, force=True)
        MADE.clear()
    finally:
        client.close()


def _make(tag: str, packages: list[str] | None) -> None:
    from portwright.sandboxes.engine import docker_client

    repository, _, version = tag.rpartition(":")
    changes = [] if packages is None else [f"LABEL {LABEL_PACKAGES}={','.join(packages)}"]
    client = docker_client()
    try:
        client.api.import_image_from_data(_archive(), repository=repository, tag=version,
                                          changes=changes)
        MADE.append(str(client.images.get(tag).id))
    finally:
        client.close()


def _stale(tag: str) -> str | None:
    from portwright.sandboxes.engine import docker_client

    client = docker_client()
    try:
        return base_image_stale(client.images.get(tag))
    finally:
        client.close()


def test_an_image_without_the_package_label_is_stale(tag: str) -> None:
    _make(tag, None)
    reason = _stale(tag)
    assert reason is not None
    assert LABEL_PACKAGES in reason


def test_an_image_lacking_a_package_is_stale_and_one_with_all_is_not(tag: str) -> None:
    _make(tag, [p for p in BASE_PACKAGES if p != "ccache"])
    reason = _stale(tag)
    assert reason is not None
    assert "ccache" in reason
    _make(tag, [*BASE_PACKAGES, "less"])
    assert _stale(tag) is None


def test_a_stale_image_is_built_again_and_a_fresh_one_is_not(tag: str) -> None:
    from portwright.sandboxes.engine import docker_client

    _make(tag, None)
    builds: list[str] = []
    said: list[str] = []

    def build() -> None:
        builds.append(tag)
        _make(tag, list(BASE_PACKAGES))

    client = docker_client()
    try:
        old = str(client.images.get(tag).id)
        image_id, built = build_once(client, tag, build, stale=base_image_stale,
                                     progress=said.append)
        assert built
        assert builds == [tag]
        assert image_id != old
        assert any("stale" in line and "building it again" in line for line in said)
        assert _stale(tag) is None
        image_id_again, built = build_once(client, tag, build, stale=base_image_stale)
        assert (image_id_again, built, builds) == (image_id, False, [tag])
        # build_base_image takes a fresh image as it is (no debootstrap)
        said.clear()
        assert build_base_image(tag, client=client, progress=said.append) == image_id
        assert any("nothing to do" in line for line in said)
    finally:
        client.close()
