"""The zip container of ``torch.save``, accepted only when ``zipfile`` and torch's own reader
cannot read it differently (the rules: docs/reliability.md)."""

from __future__ import annotations

import struct
import zipfile
from typing import BinaryIO

ZIP_MAGIC = b"PK\x03\x04"  # a local file header: what torch looks for at offset 0
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_END = struct.Struct("<4sHHHHIIH")
_END64_LOCATOR = struct.Struct("<4sIQI")
_END64 = struct.Struct("<4sQHHIIQQQQ")
_DESCRIPTOR_MAGIC = b"PK\x07\x08"
_ENCRYPTED = 0x1 | 0x40  # traditional and strong encryption
_ALLOWED_FLAGS = 0x2 | 0x4 | 0x8 | 0x800  # compression options, a data descriptor, UTF-8 names
_CRC_BLOCK = 1 << 20


def open_torch_zip(handle: BinaryIO, size: int) -> tuple[zipfile.ZipFile, str]:
    """The archive in ``handle`` (``size`` bytes) and its folder, once every rule holds."""
    cd_offset, count = _end_records(handle, size)
    try:
        archive = zipfile.ZipFile(handle)
    except zipfile.BadZipFile as err:
        raise ValueError(f"a damaged zip archive ({err})") from None
    try:
        infos = archive.infolist()
        if archive.start_dir != cd_offset or len(infos) != count:
            raise ValueError("a zip archive whose end record disagrees with its directory")
        folder = _folder(infos)
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED:
                raise ValueError(f"a compressed member {info.filename!r} (torch.save stores them uncompressed)")
            if info.flag_bits & _ENCRYPTED:
                raise ValueError(f"an encrypted member {info.filename!r}")
            if info.flag_bits & ~_ALLOWED_FLAGS:
                raise ValueError(
                    f"member {info.filename!r} with zip flags {info.flag_bits:#x}, which torch never writes"
                )
            if info.file_size != info.compress_size:
                raise ValueError(
                    f"member {info.filename!r} claims {info.file_size} bytes but stores {info.compress_size}"
                )
        _check_tiling(handle, infos, cd_offset)
        for info in infos:  # torch does not check them: a flipped bit would load as another weight
            try:
                with archive.open(info) as member:
                    while member.read(_CRC_BLOCK):
                        pass
            except zipfile.BadZipFile as err:
                raise ValueError(f"member {info.filename!r} is damaged ({err})") from None
    except BaseException:
        archive.close()
        raise
    return archive, folder


def _end_records(handle: BinaryIO, size: int) -> tuple[int, int]:
    """(directory offset, entries) from the end record(s), which must close the file after the directory."""
    if size < _END.size:
        raise ValueError("a zip archive too short to hold its end record")
    handle.seek(size - _END.size)
    magic, disk, cd_disk, here, count, cd_size, cd_offset, comment = _END.unpack(handle.read(_END.size))
    if magic != b"PK\x05\x06" or comment != 0:
        raise ValueError("a zip archive that does not end with its end record (data appended?)")
    end_of_directory = size - _END.size
    if size >= _END.size + _END64_LOCATOR.size:
        handle.seek(size - _END.size - _END64_LOCATOR.size)
        locator = _END64_LOCATOR.unpack(handle.read(_END64_LOCATOR.size))
        if locator[0] == b"PK\x06\x07":
            end64_offset = locator[2]
            if end64_offset + _END64.size != size - _END.size - _END64_LOCATOR.size:
                raise ValueError("a zip64 end record that is not where its locator says")
            handle.seek(end64_offset)
            short = (here, count, cd_size, cd_offset)
            (magic64, record_size, _, _, disk, cd_disk, here, count, cd_size, cd_offset) = _END64.unpack(
                handle.read(_END64.size)
            )
            if magic64 != b"PK\x06\x06" or record_size != _END64.size - 12:
                raise ValueError("a damaged zip64 end record")
            # The short record's values: the same, or "see the zip64 record" (all bits set).
            unknown = (0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF)
            for value, value64, sentinel in zip(short, (here, count, cd_size, cd_offset), unknown):
                if value not in (value64, sentinel):
                    raise ValueError("a zip archive whose two end records disagree")
            end_of_directory = end64_offset
    if disk != 0 or cd_disk != 0 or here != count:
        raise ValueError("a multi-disk zip archive")
    if cd_offset + cd_size != end_of_directory:
        raise ValueError("bytes between the zip directory and its end record")
    return cd_offset, count


def _folder(infos: list[zipfile.ZipInfo]) -> str:
    if not infos:
        raise ValueError("an empty zip archive")
    if "/" not in infos[0].filename:
        raise ValueError(f"the first member {infos[0].filename!r} is not in a folder, as torch's reader requires")
    folder = infos[0].filename.split("/")[0] + "/"
    seen: set[str] = set()
    for info in infos:
        name = info.filename
        if name != info.orig_filename or "\\" in name:
            raise ValueError(f"a member name with a NUL byte or backslash: {info.orig_filename!r}")
        if not name.startswith(folder) or name == folder:
            raise ValueError(f"member {name!r} outside the archive's folder {folder!r}")
        if name.lower() in seen:
            raise ValueError(f"the member name {name!r} twice (ignoring case, as torch does)")
        seen.add(name.lower())
    return folder


def _check_tiling(handle: BinaryIO, infos: list[zipfile.ZipInfo], cd_offset: int) -> None:
    """The members, in file order, follow each other from byte 0 up to the central directory."""
    position = 0
    for info in sorted(infos, key=lambda i: i.header_offset):
        if info.header_offset != position:
            raise ValueError(
                f"{abs(info.header_offset - position)} bytes unaccounted for before member {info.filename!r}"
            )
        handle.seek(position)
        header = handle.read(_LOCAL_HEADER.size)
        if len(header) != _LOCAL_HEADER.size:
            raise ValueError(f"member {info.filename!r} lies past the end of the file")
        magic, _, flags, method, _, _, _, _, _, name_length, extra_length = _LOCAL_HEADER.unpack(header)
        encoded = info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")
        if magic != ZIP_MAGIC or handle.read(name_length) != encoded or flags != info.flag_bits or method != 0:
            raise ValueError(f"member {info.filename!r}'s local header disagrees with the zip directory")
        position += _LOCAL_HEADER.size + name_length + extra_length + info.compress_size
        if info.flag_bits & 0x8:  # a data descriptor follows the data: crc, sizes
            position += _descriptor_size(handle, position, info)
    if position != cd_offset:
        raise ValueError(f"{abs(cd_offset - position)} bytes unaccounted for before the zip directory")


def _descriptor_size(handle: BinaryIO, at: int, info: zipfile.ZipInfo) -> int:
    handle.seek(at)
    raw = handle.read(24)
    if raw[:8] == _DESCRIPTOR_MAGIC + struct.pack("<I", info.CRC):
        if raw[8:16] == struct.pack("<II", info.compress_size, info.file_size):
            return 16
        if raw[8:24] == struct.pack("<QQ", info.compress_size, info.file_size):
            return 24
    raise ValueError(f"member {info.filename!r}'s data descriptor disagrees with the zip directory")
