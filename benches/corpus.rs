//! A fixed, deterministic corpus of synthetic clinical notes with planted identifiers.

pub fn notes(count: usize) -> Vec<String> {
    let first = [
        "John", "Aisha", "Maria", "Wei", "Fatima", "Carlos", "Emily", "Raj",
    ];
    let last = [
        "Smith", "Okafor", "Garcia", "Chen", "Haddad", "Alvarez", "Baker", "Patel",
    ];
    let cities = ["Boston", "Chicago", "Denver", "Seattle", "Austin", "Miami"];
    let body = [
        "Patient presents for follow-up of type 2 diabetes and hypertension. ",
        "Blood pressure 132/84, heart rate 76, afebrile. Lungs clear to auscultation bilaterally. ",
        "Metformin 1000 mg twice daily continued; lisinopril increased to 20 mg daily. ",
        "HbA1c improved from 8.1 to 7.2 percent over three months. ",
        "Counseled on diet, exercise and home glucose monitoring. Return in three months. ",
    ];
    (0..count)
        .map(|i| {
            let (f, l, c) = (first[i % 8], last[(i * 3) % 8], cities[i % 6]);
            let mut note = format!(
                "{f} {l} was seen on the ward. Contact: ({}) 555-01{:02}, {}.{}@example.com. Lives at {} Oak Street, {c}. ",
                200 + (i * 37) % 700,
                i % 100,
                f.to_lowercase(),
                l.to_lowercase(),
                10 + i
            );
            for k in 0..(2 + i % 5) {
                note.push_str(body[(i + k) % body.len()]);
            }
            note.push_str(&format!("Discussed with Dr. {} by phone.", last[(i + 5) % 8]));
            note
        })
        .collect()
}
